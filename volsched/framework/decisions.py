"""What a session hands back, as typed data: decisions (bind, evict, admit), why something was refused
(:class:`Status`), status and events.

The session decides; adapters (``volsched.kube`` for a real cluster, ``volsched.simulate`` in memory)
carry these out. Nothing here does I/O, and nothing here decides: this module is only the vocabulary
between the engine and the edges. A refusal stays a :class:`Status` (a code, who said it, the reasons)
until an edge needs words: :meth:`Status.render` is the one place reasons are joined into text.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import field, fields
from typing import Any

from volsched.model.devices import ClaimAllocation
from volsched.model.vocabulary import PodGroupPhase
from volsched.model.volumes import VolumeBinding
from volsched.records import dataclass


class Code(enum.Enum):
    """How final a refusal is (the Kubernetes scheduling framework's codes)."""

    #: Not now: capacity freed (by evicting, by pods finishing) or a turn later may change the answer.
    UNSCHEDULABLE = "Unschedulable"
    #: Not until the objects change (a missing queue, an invalid gang): evicting pods would not help.
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
    #: Something went wrong deciding.
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class Status:
    """Why a job or a pod was refused, as data: the code, the plugin (or action) that said so, and its
    reasons, each a clause as users read it (plugins are named in it where the session combined their
    answers, as in ``proportion: queue q is at its deserved share``)."""

    code: Code
    plugin: str
    reasons: tuple[str, ...] = ()

    def render(self) -> str:
        """The reasons as one line; see :func:`render`."""
        return render((self,))

    def about(self, subject: str) -> Status:
        """The same refusal said of ``subject`` (``task t-0``, a gang): ``subject: reasons``."""
        if not self.reasons:
            return Status(self.code, self.plugin, (subject,))
        return Status(self.code, self.plugin, (f"{subject}: {self.reasons[0]}", *self.reasons[1:]))

    def also(self, reason: str) -> Status:
        """The same refusal with one more reason after the others."""
        return Status(self.code, self.plugin, (*self.reasons, reason))


def render(statuses: Iterable[Status]) -> str:
    """Every reason of ``statuses`` in order, joined with ``; ``: the one place refusals become text."""
    return "; ".join(r for s in statuses for r in s.reasons)


@dataclass(frozen=True, slots=True)
class Bind:
    """A pod bound to a node by a session, with what the edge writes before or with the bind."""

    pod: str  # "namespace/name"
    uid: str
    node: str
    #: The pod's ResourceClaims as allocated for it: what the edge writes into each claim's status
    #: (allocation, and the pod in ``reservedFor``) before it binds the pod.
    claims: tuple[ClaimAllocation, ...] = ()
    #: The pod's unbound claims of a WaitForFirstConsumer class as bound for it (a volume, or one to
    #: provision on ``node``): what the edge writes and waits for before it binds the pod.
    volumes: tuple[VolumeBinding, ...] = ()
    #: What the pod is bound under (``volsched.model.admitted.bound_under``; ``admitted.STANDING_ALONE``
    #: for a pod standing alone; "" for a pod of a group made for a controller owner's pods): the edge
    #: writes it on the pod with the bind, in the same request.
    bound_under: str = ""


#: The label of an eviction's fact naming a filter's term its victim kept the beneficiary out by (see
#: ``EvictionReason.facts``; ``messages.render_eviction_told`` renders one of another namespace's pod
#: without its term).
KEEPS_OUT = "keeps it out by"


@dataclass(frozen=True, slots=True)
class EvictionReason:
    """Why a pod is evicted, as data. The edges render it (``volsched.framework.messages``) into the
    pod's ``DisruptionTarget`` condition, its ``Preempted``/``Evicted`` event and the simulator's output.

    Amounts are ``{resource: amount}`` in base units (cores, bytes). An action that knows more says so
    in ``facts`` (label, value) pairs, rendered in order after the amounts.
    """

    action: str  # preempt, reclaim, shuffle
    #: The evicted pod's job and its priority.
    victim_job: str = ""
    priority: int | None = None
    #: The pod placed in the victim's stead, its job, priority and queue ("" when nobody is: shuffle).
    beneficiary: str = ""
    beneficiary_job: str = ""
    beneficiary_priority: int | None = None
    beneficiary_queue: str = ""
    #: What the beneficiary asks for; what this eviction frees.
    needs: Mapping[str, float] = field(default_factory=dict)
    frees: Mapping[str, float] = field(default_factory=dict)
    #: Who gives the capacity up (``job ns/name`` or ``queue name``), what it holds before and after.
    holder: str = ""
    holds_before: Mapping[str, float] = field(default_factory=dict)
    holds_after: Mapping[str, float] = field(default_factory=dict)
    #: Further numbers, as (label, text or amounts), e.g. (("queue q holds", {"cpu": 2.0}),).
    facts: tuple[tuple[str, str | Mapping[str, float]], ...] = ()
    #: A plugin's own explanation (shuffle's victims come with one).
    detail: str = ""
    #: Seconds the victim had run (since ``status.startTime``): the work its eviction throws away (0:
    #: none, or not started).
    ran: float = 0.0
    #: What the eviction goes past, in the victim filters' words (a PodDisruptionBudget that allows no
    #: further disruption): reclaim's and preempt's last resort, where the pods within every budget
    #: could not make room. Such a pod is deleted, not evicted (the Eviction API would refuse it). Left
    #: out of the repr while empty: what recorded evictions before it was added reads the same.
    past_budget: tuple[str, ...] = field(default=(), repr=False)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)
            if f.repr or (f.name == "past_budget" and self.past_budget)
        )
        return f"{type(self).__name__}({shown})"


@dataclass(frozen=True, slots=True)
class Evict:
    """Evict ``pod`` from ``node``, with its reason as data (which names the action)."""

    pod: str
    uid: str
    node: str
    reason: EvictionReason
    #: False: the pod is moved off its node for good (shuffle); whoever carries the eviction out records
    #: that the pod's owner keeps off that node for a while (``ClusterState.moved_off``).
    may_return: bool = True

    @property
    def action(self) -> str:
        """The action that evicts (preempt, reclaim, shuffle): the reason's."""
        return self.reason.action

    @property
    def deletes(self) -> bool:
        """Whether the pod is deleted rather than evicted: taken past a disruption budget."""
        return bool(self.reason.past_budget)


#: The phase an admission gives a job.
_INQUEUE = PodGroupPhase.INQUEUE.value


@dataclass(frozen=True, slots=True)
class Admit:
    """A job (PodGroup ``namespace/name``) admitted into its queue this session: its new phase."""

    job: str
    phase: str


@dataclass(frozen=True, slots=True)
class Event:
    """An event about one object, rendered from a rejection or a decision."""

    kind: str  # Pod, PodGroup, Queue
    namespace: str
    name: str
    reason: str
    message: str
    type: str = "Warning"
    #: For a pod of a PodGroup, the PodGroup's key (what the dashboard groups pods by); else "".
    podgroup: str = ""

    @property
    def object(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


@dataclass(slots=True, frozen=True)
class PodGroupStatus:
    """A PodGroup's status after a session (read-only: results of sessions on snapshots that share a
    settled job share its status)."""

    phase: str
    queue: str
    min_member: int
    running: int
    succeeded: int
    failed: int
    pending: int
    scheduled: int
    #: Why the gang is not (fully) running, if it is not, as data.
    rejections: tuple[Status, ...] = ()
    #: The controller owner a PodGroup stands for (``Job train``; its name is ``podgroup-<uid>``), else "".
    owner: str = ""
    #: Where a waiting job stands in its queue (1: next), among the jobs of the queue waiting for room,
    #: in the session's job order; None when it waits for nothing.
    queue_position: int | None = None
    #: When the job is expected to start (Unix seconds; a reservation's start), None when not known.
    expected_start: float | None = None
    #: The reservation held for the job, as users read it (which nodes, from when), None when none.
    reservation: str | None = None
    #: Why no reservation can be held for the waiting job (a gang with ``spec.topology``), None otherwise.
    no_reservation: str | None = None
    #: Fields of the PodGroup volsched deliberately does not honour: (field, why), its ``FieldsIgnored``.
    #: (Left out of the repr, which the replay digests read: none of their objects sets one, and the
    #: digests of decisions stay comparable across the field's arrival.)
    ignored: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    #: The minMember the gang started with, after this session (``volsched.model.admitted``), None
    #: when not known. (Left out of the repr, as ``ignored``: decisions, not this record, make the digests.)
    admitted_min_member: int | None = field(default=None, repr=False)

    @property
    def unschedulable(self) -> str | None:
        """The rejections rendered, for the Unschedulable condition (None: nothing to say)."""
        return render(self.rejections) or None


@dataclass(slots=True)
class QueueStatus:
    """A queue as a session left it: what the Queue's status and the queue metrics say."""

    name: str
    state: str
    weight: int
    allocated: dict[str, float]
    request: dict[str, float]
    guarantee: dict[str, float]
    capability: dict[str, float] | None
    deserved: dict[str, float] | None = None
    real_capability: dict[str, float] | None = None
    inqueue: dict[str, float] | None = None
    share: float | None = None
    podgroups: dict[str, int] = field(default_factory=dict)  # phase -> count
    #: The parent queue (None: the root, the whole cluster).
    parent: str | None = None
    #: Configuration problems, (reason, message): a missing parent, a cycle, a guarantee not met.
    problems: list[tuple[str, str]] = field(default_factory=list)
    #: Fields read and deliberately not honoured, (field, why): a Volcano Queue's ``spec.deserved``.
    ignored: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class StatusDelta:
    """Which PodGroup statuses of a session's result may say another phase, or pods pending, than the
    last session's result said: at most ``keys`` (each in ``podgroups``); every other PodGroup is of
    the settled run (nothing pending) and has the phase it had in the result whose ``now`` is this
    one's ``since``. A driver that wrote that result's phases back has only ``keys`` to look at; one
    that did not (another result, or none, in between) looks at them all."""

    #: What the result this one follows was, and what this one is (compared by identity).
    since: object | None
    now: object
    keys: list[str]


@dataclass
class SessionResult:
    """What one session decided: binds, evictions, admissions, and the statuses to write."""

    binds: list[Bind] = field(default_factory=list)
    #: Job key -> the nodes its pods were bound to this session (one per bind), for the PodGroup's
    #: ``Scheduled`` event.
    bound_jobs: dict[str, list[str]] = field(default_factory=dict)
    evictions: list[Evict] = field(default_factory=list)
    #: The jobs admitted into their queue this session (phase Inqueue), by key, in order: ``admits``
    #: renders them. Only keys are kept: nothing the operator runs reads the decisions (a group's phase
    #: is written from the session's jobs), and a backlog admits 50,000 jobs before its first bind.
    admitted: list[str] = field(default_factory=list)
    podgroups: dict[str, PodGroupStatus] = field(default_factory=dict)
    #: Which of ``podgroups`` may say another phase, or pods pending, than the last session's (None:
    #: any of them).
    podgroups_delta: StatusDelta | None = None
    queues: dict[str, QueueStatus] = field(default_factory=dict)
    namespaces: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    #: Pods of ours pipelined onto the room their victims free: pending (neither bound nor unschedulable)
    #: until the victims go, with or without a PodGroup.
    pipelined: int = 0
    #: The pods that hold a claim on a node after this session (room an eviction frees, held for them:
    #: kube-scheduler's nominated node), pod key -> node name, in pod key order. It is the whole set, not
    #: what changed: the edges write it to each pod's ``status.nominatedNodeName`` and clear it on a pod
    #: they wrote it to that is no longer here.
    nominated: dict[str, str] = field(default_factory=dict)
    #: Jobs this session left with pods of ours pending (pipelined ones included). 0: every pod of ours
    #: is placed or bound, so a session whose actions decide only for pending pods has nothing to decide
    #: until the cache changes (see ``volsched.cycle.IdleSkip``).
    waiting: int = 0
    #: Why jobs and pods were refused, as data, by object (``PodGroup ns/name``, ``Pod ns/name``); the
    #: events, ``unschedulable`` and each PodGroup's ``unschedulable`` are these rendered. A ``Pod`` entry
    #: is a pending pod this session could not place, and nothing else.
    rejections: dict[str, tuple[Status, ...]] = field(default_factory=dict)
    #: State kept across sessions (plugins' ``session.carryover``): the drivers store it back for the
    #: next session. A copy: the session never writes the cache's own.
    carryover: dict[str, Any] = field(default_factory=dict)
    #: Wall time per action and per plugin callback group, in seconds.
    timings: dict[str, float] = field(default_factory=dict)
    #: ``unschedulable_pods`` as last derived, with the ``rejections`` dict and its size it was derived
    #: from (None: not derived yet).
    _unschedulable_pods: tuple[dict[str, tuple[Status, ...]], int, tuple[str, ...]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def admits(self) -> list[Admit]:
        """The admissions decided (``admitted``), as decisions: each job's new phase."""
        return [Admit(job=key, phase=_INQUEUE) for key in self.admitted]

    @property
    def changed(self) -> bool:
        return bool(self.binds or self.evictions)

    @property
    def unschedulable_pods(self) -> tuple[str, ...]:
        """The pending pods (``ns/name``) this session could not place: those with a ``Pod`` rejection.

        Derived once per state of ``rejections`` (the operator's log, metrics, pacing and status writes
        each read it, and each read walked every rejection): again when the dict is another or its size
        changed. A rejection is only ever added (the session's close, ``runner._render_events``, is the
        one writer; writing a key again keeps the keys), so the same dict of the same size has the same keys in the
        same order. Taking a rejection away and adding another between two reads is the one change
        this does not see: nothing does it."""
        rejections = self.rejections
        memo = self._unschedulable_pods
        if memo is not None and memo[0] is rejections and memo[1] == len(rejections):
            return memo[2]
        pods = tuple(key[4:] for key in rejections if key.startswith("Pod "))
        self._unschedulable_pods = (rejections, len(rejections), pods)
        return pods

    @property
    def unschedulable(self) -> dict[str, str]:
        """The pending pods this session could not place, with the reason (the PodScheduled=False
        message): their rejections rendered (a new dict each call)."""
        return {key[4:]: render(why) for key, why in self.rejections.items() if key.startswith("Pod ")}
