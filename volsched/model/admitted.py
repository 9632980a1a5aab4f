"""The minMember a gang was admitted and started with: reclaim and preempt keep no more of its pods.

A raise of a running gang's minMember (ours, Volcano's, the Workload API's ``minCount``) counts for
placement, not for protection: eviction keeps ``min(minMember now, minMember started with)`` pods
(:func:`protected`; none of a job of minMember 1, no gang: :func:`kept`), and a lowered minMember
counts at once. :func:`after_session` keeps the record, :func:`condition` says it in the PodGroup's
status (:data:`CONDITION`), :func:`read` reads it back after a restart. Design: docs/tenancy.md "Raising
minMember on a running gang". Pure: no I/O.

What a pod was bound under (:data:`BOUND_UNDER`, written with its bind, :func:`bound_under`) outlives
its PodGroup object: a PodGroup deleted and made again over running pods is held to their record
(:func:`read_bound`, :func:`inherit`). Design: docs/tenancy.md "A PodGroup made again over its pods".
"""

from __future__ import annotations

import base64
import hmac
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

from volsched.model.vocabulary import PodGroupPhase, PodGroupSpec
from volsched.records import dataclass

#: The condition on a PodGroup that says how many of its pods reclaim and preempt keep, and why.
CONDITION = "MinMemberProtected"
#: Its reasons: minMember now is within what the gang started with; or was raised past it since.
AS_ADMITTED = "MinMemberAtStart"
RAISED = "RaisedAfterStart"
#: The tail of the condition's message that carries the record (read back after a restart).
_RECORD = re.compile(r"\(started with minMember (\d+)\)$")


def protected(min_member: int, admitted: int | None) -> int:
    """A gang's minMember, but no more than the minMember it was admitted with (when known): what
    allocate completes past its queue's share, and (when above 1) what reclaim and preempt keep."""
    return min_member if admitted is None or admitted >= min_member else admitted


def kept(min_member: int, admitted: int | None) -> int:
    """How many of a job's pods reclaim and preempt never take it below: :func:`protected`, and none when
    that is 1. A job of minMember 1 is no gang: any number of its pods is whole, so it may lose every
    one (docs/starvation.md#who-may-be-a-victim)."""
    keep = protected(min_member, admitted)
    return keep if keep > 1 else 0


def after_session(admitted: int | None, *, min_member: int, phase: PodGroupPhase, ready: int) -> int | None:
    """The record once a session gave the gang ``phase`` with ``ready`` pods placed: forgotten when it
    is back to Pending holding nothing; made (the minMember now) when it has left Pending and holds
    pods without one (it started, or is first seen started); else kept, whatever minMember says now."""
    if phase is PodGroupPhase.PENDING:
        return None if ready == 0 else admitted
    return min_member if admitted is None and ready else admitted


#: :func:`condition`'s messages, each ending with the record :func:`read` reads back: a gang within the
#: minMember it started with; a job of minMember 1 (within what it started with), no gang; a gang raised
#: past the minMember it started with; and a job that started as no gang, raised since.
_AT_START = "reclaim and preempt keep {keep} of its pods (started with minMember {start})"
_NO_GANG = (
    "reclaim and preempt may take every one of its pods: a job of minMember 1 is no gang "
    "(started with minMember {start})"
)
_RAISED = (
    "reclaim and preempt keep {keep} of its pods, not {now}: minMember was raised to {now} after the gang "
    "started, and a raise protects more pods only once the gang starts anew, admitted again after it holds "
    "no pod (started with minMember {start})"
)
_RAISED_FROM_ONE = (
    "reclaim and preempt may take every one of its pods: it started as no gang, and minMember was raised "
    "to {now} after it started; a raise protects pods only once the gang starts anew, admitted again after "
    "it holds no pod (started with minMember {start})"
)


def condition(min_member: int, admitted: int | None) -> dict[str, str] | None:
    """The :data:`CONDITION` (without its time) for a gang with this record; None without one."""
    if admitted is None:
        return None
    keep = kept(min_member, admitted)
    if min_member > admitted:
        reason, template = RAISED, _RAISED if keep else _RAISED_FROM_ONE
    else:
        reason, template = AS_ADMITTED, _AT_START if keep else _NO_GANG
    message = template.format(keep=keep, now=min_member, start=admitted)
    return {"type": CONDITION, "status": "True", "reason": reason, "message": message}


def read(status: Any) -> int | None:
    """The record a PodGroup's ``status`` carries in its :data:`CONDITION`, or None."""
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    if not isinstance(conditions, list):
        return None
    for cond in conditions:
        if isinstance(cond, Mapping) and cond.get("type") == CONDITION:
            found = _RECORD.search(str(cond.get("message") or ""))
            if found:
                value = int(found.group(1))
                return value if 1 <= value < 2**31 else None
    return None


#: The pod annotation a bind writes (the Binding's own annotations, which the apiserver copies onto the
#: pod as it binds it): the PodGroup object (uid), queue, priority class, priority and minMember-at-start
#: its pod was bound under. Only the operator may write it (the pod admission policy).
BOUND_UNDER = "scheduling.volsched.io/bound-under"
_INT32 = 2**31


@dataclass(frozen=True, slots=True, order=True)
class BoundUnder:
    """A pod's :data:`BOUND_UNDER` record, read."""

    queue: str
    priority_class: str
    priority: int
    min_member: int
    uid: str


def bound_under(*, uid: str, queue: str, priority_class: str, priority: int, min_member: int) -> str:
    """The :data:`BOUND_UNDER` text for a pod bound now under PodGroup ``uid`` (one line of JSON)."""
    return json.dumps(
        {
            "podGroup": uid,
            "queue": queue,
            "priorityClassName": priority_class,
            "priority": priority,
            "minMember": min_member,
        },
        separators=(",", ":"),
    )


#: The :data:`BOUND_UNDER` text a bind of a pod standing alone writes: no PodGroup, so :func:`read_bound`
#: reads no record of it; the cluster shows the pod was bound standing alone, and it keeps its name against
#: a PodGroup of it whatever their creation times (``volsched.cache.names``).
STANDING_ALONE = '{"standingAlone":true}'


def bound_alone(text: str | None) -> bool:
    """Whether a :data:`BOUND_UNDER` annotation's text is the record of a bind standing alone."""
    return text == STANDING_ALONE


#: Longer than any record :func:`bound_under` writes (names of at most 253 characters): not read.
_LONGEST_RECORD = 2048


def read_bound(text: str) -> BoundUnder | None:
    """A :data:`BOUND_UNDER` annotation's record, or None when it is not one :func:`bound_under` makes.
    A text longer than any record is not parsed (nor kept): the annotation is a pod's, up to 256 KiB."""
    return _read_bound(text) if len(text) <= _LONGEST_RECORD else None


@lru_cache(maxsize=1024)
def _read_bound(text: str) -> BoundUnder | None:
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError):  # (nested past the interpreter's limit: no record either)
        return None
    if not isinstance(raw, dict):
        return None
    uid, queue, cls = raw.get("podGroup"), raw.get("queue"), raw.get("priorityClassName")
    priority, min_member = raw.get("priority"), raw.get("minMember")
    if not (isinstance(uid, str) and uid and isinstance(queue, str) and queue and isinstance(cls, str)):
        return None
    if type(priority) is not int or not -_INT32 <= priority < _INT32:
        return None
    if type(min_member) is not int or not 1 <= min_member < _INT32:
        return None
    return BoundUnder(queue=queue, priority_class=cls, priority=priority, min_member=min_member, uid=uid)


def inherit(pg: PodGroupSpec, record: BoundUnder | None) -> PodGroupSpec:
    """``pg`` held to what its running pods were bound under (``record``, None: none holds a node): their
    queue, priority class and priority, and the minMember they started with, whatever its object says now
    (a PodGroup made again over them, or changed where no admission policy fixes it). ``pg`` itself when
    they agree."""
    if record is None or (
        pg.queue == record.queue
        and pg.priority_class_name == record.priority_class
        and pg.priority == record.priority
        and pg.admitted_min_member == record.min_member
    ):
        return pg
    return replace(
        pg,
        queue=record.queue,
        priority_class_name=record.priority_class,
        priority=record.priority,
        admitted_min_member=record.min_member,
    )


# --- the signed record (note16 Found 3, note17 Found 1; docs/tenancy.md "The signed record") -------------

#: A signed record ends with its signature: ``"sig"``, base64 of HMAC-SHA256 over the pod's uid and the
#: record's text before it. The text signed is the text written (no JSON made canonical again).
_SIGNED = re.compile(r',"sig":"([A-Za-z0-9+/]{43}=)"\}\Z')


def _mac(key: bytes, uid: str, body: str) -> bytes:
    """HMAC-SHA256 with ``key`` over the uid and the text, from the key's HMAC made once (:func:`_keyed`)
    and copied: ``hmac.digest`` looks the digest up and makes an HMAC anew each call, which costs most
    with the processor's caches cold, as on a lone arriving pod's bind, which signs before its request
    is sent (measured in docs/benchmarks/2026-12-02.md, wire)."""
    mac = _keyed(key).copy()
    mac.update(b"%s\n%s" % (uid.encode(), body.encode()))
    return mac.digest()


@lru_cache(maxsize=8)
def _keyed(key: bytes) -> hmac.HMAC:
    """``key``'s HMAC-SHA256 with nothing fed yet, kept (a replica signs with one key, checks with the
    few of a rotation); each use takes a copy, never feeds it."""
    return hmac.new(key, digestmod="sha256")


def sign(text: str, *, uid: str, key: bytes) -> str:
    """Record ``text`` (one JSON object, as :func:`bound_under` or :data:`STANDING_ALONE` write it)
    signed for the pod of uid ``uid`` with ``key``: its last field ``sig``."""
    sig = base64.b64encode(_mac(key, uid, text)).decode("ascii")
    return f'{text[:-1]},"sig":"{sig}"}}'


def signed(text: str) -> bool:
    """Whether record ``text`` carries a signature (whoever's key made it)."""
    return _SIGNED.search(text) is not None


def verified(text: str, *, uid: str, keys: Sequence[bytes]) -> str | None:
    """The record ``text`` carries for the pod of uid ``uid``, without its signature, when one of ``keys``
    signed it for that uid (:func:`sign`); None when it is unsigned, changed, or signed for another pod."""
    found = _SIGNED.search(text)
    if found is None:
        return None
    body = f"{text[: found.start()]}}}"
    given = base64.b64decode(found.group(1))
    return body if any(hmac.compare_digest(_mac(key, uid, body), given) for key in keys) else None


#: The reason of the event on a pod whose record is not taken as unsigned by the scheduler's key.
NOT_VERIFIED = "BoundUnderNotVerified"
#: Why such a record is not taken (an orphan's, or a group's held to it, is told so).
NOT_VERIFIED_WHY = (
    "it is not signed by this scheduler's key for this pod (written or changed by someone else, or "
    "copied from another pod)"
)


@dataclass(frozen=True, slots=True)
class RecordKeys:
    """The keys the scheduler signs records with (the first signs; each verifies: a key rotated), and
    when its key Secret was made (Unix seconds): a pod made before then may carry an unsigned record,
    written by a scheduler before signing."""

    keys: tuple[bytes, ...]
    since: float


def checked(text: str, *, uid: str, created: float, keys: RecordKeys) -> str | None:
    """The record ``text`` (a pod's :data:`BOUND_UNDER` annotation) stands for on the pod of uid ``uid``
    made at ``created`` (Unix seconds; 0: not known): its text without the signature when one of the
    keys signed it for that pod; the text itself when unsigned on a pod made strictly before the key
    (``creationTimestamp`` counts whole seconds: the same second is after); None when not verified."""
    body = verified(text, uid=uid, keys=keys.keys)
    if body is not None:
        return body
    if _SIGNED.search(text) is None and 0.0 < created < keys.since:
        return text
    return None
