"""Fixtures and helpers for the operator's end-to-end tests (a real kube-apiserver, see conftest.py).

``cluster`` is a fresh control plane per test (nodes and pods from one test never leak into another's
shares), with the CRDs applied. ``operator`` starts ``python -m volsched run`` against it as a
subprocess and stops it (SIGTERM) afterwards. Waits are bounded polls (:func:`wait_for`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.controlplanes import running
from volsched.framework.config import default_config_with
from volsched_dev.devcluster import LocalControlPlane

if TYPE_CHECKING:
    from volsched.operator import Operator

ROOT = Path(__file__).resolve().parents[2]
GROUP, VERSION = "scheduling.volsched.io", "v1beta1"
OPERATOR_NS = "volsched-system"
#: The operator's scheduler-config ConfigMap (manifests/) and its key.
CONFIG_MAP, CONFIG_KEY = "volsched-scheduler-config", "volsched-scheduler.conf"
#: The default config with the descheduler every session (shuffle): failed pods (those the kubelet
#: evicted) and crash-looping ones (more than 10 restarts) are evicted.
DESCHEDULE_CONFIG = default_config_with(
    actions="enqueue, allocate, backfill, shuffle",
    lines={
        "  - name: pdb": """\
  - name: pdb
  - name: rescheduling
    arguments:
      interval: 0s
      strategies:
      - name: removeFailedPods
        params: {reasons: [Evicted]}
      - name: removePodsHavingTooManyRestarts
        params: {podRestartThreshold: 10}"""
    },
)
T = TypeVar("T")


def grant(
    api: client.ApiClient, namespace: str, *, user: str, name: str, rules: Sequence[client.V1PolicyRule]
) -> None:
    """A Role ``name`` in ``namespace`` with ``rules``, bound to ``user`` (a RoleBinding ``name``)."""
    rbac = client.RbacAuthorizationV1Api(api)
    rbac.create_namespaced_role(
        namespace, client.V1Role(metadata=client.V1ObjectMeta(name=name), rules=rules)
    )
    group = "rbac.authorization.k8s.io"
    rbac.create_namespaced_role_binding(
        namespace,
        client.V1RoleBinding(
            metadata=client.V1ObjectMeta(name=name),
            role_ref=client.V1RoleRef(api_group=group, kind="Role", name=name),
            subjects=[client.RbacV1Subject(kind="User", name=user, api_group=group)],
        ),
    )


def wait_for(
    cond: Callable[[], T],
    timeout: float = 30.0,
    interval: float = 0.2,
    what: str = "condition",
    *,
    operator: OperatorProcess | None = None,
) -> T:
    """Poll ``cond`` until it returns something truthy; fail the test after ``timeout`` seconds.

    With ``operator``, fail at once, with its log, when that operator has exited: what it did not do
    then is no timeout of its own; and on a timeout, show the end of its log (why it did not)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        if operator is not None:
            operator.check_running()
        try:
            last = cond()
        except ApiException as exc:
            last = exc
        if last and not isinstance(last, Exception):
            return last  # type: ignore[no-any-return]
        time.sleep(interval)
    tail = f"\noperator log (last {TAIL_LINES} lines):\n{operator.log_tail()}" if operator else ""
    pytest.fail(f"timed out after {timeout}s waiting for {what} (last: {last!r}){tail}")


#: Lines of an operator's log a timed-out wait shows.
TAIL_LINES = 80


def a_later_second(made: datetime | str) -> None:
    """Wait until the clock is 1.5 s past ``made`` (an object's creationTimestamp, as the client reads it or
    as its JSON says), so that what is made next has a later one: creation times count whole seconds."""
    then = made if isinstance(made, datetime) else datetime.fromisoformat(made.replace("Z", "+00:00"))
    wait_for(
        lambda: datetime.now(UTC) >= then + timedelta(seconds=1.5), 5, interval=0.1, what="a later second"
    )


# --- objects -----------------------------------------------------------------------------------------------


def node(
    name: str, cpu: str = "4", memory: str = "8Gi", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {
            "capacity": res,
            "allocatable": res,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}],
        },
    }


def pod(
    name: str,
    cpu: str = "1",
    *,
    group: str | None = None,
    scheduler: str = "volsched",
    node_selector: dict[str, str] | None = None,
    memory: str = "128Mi",
    preemption_policy: str | None = None,
    gates: Sequence[str] = (),
    priority_class: str | None = None,
) -> dict[str, Any]:
    """A pod of one container asking for ``cpu`` and ``memory``; ``gates``: the names of its
    ``schedulingGates`` (held back until they are removed); ``preemption_policy``: its
    ``preemptionPolicy`` (``Never``: it evicts nobody); ``priority_class``: its ``priorityClassName``."""
    meta: dict[str, Any] = {"name": name}
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
        ],
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    if preemption_policy:
        spec["preemptionPolicy"] = preemption_policy
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def podgroup(
    name: str, min_member: int, queue: str = "default", *, priority_class: str | None = None
) -> dict[str, Any]:
    """A PodGroup of ``min_member`` in ``queue``; ``priority_class``: its ``priorityClassName``."""
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}


#: What a session says of a pod under a config whose only action is enqueue (its FailedScheduling event).
PLACE_NONE = "the scheduler config's actions (enqueue) place no pod that requests"


def failed_scheduling(k: Kube, ns: str, name: str) -> str:
    """The message of pod ``ns/name``'s FailedScheduling event ("" before there is one): a session's word
    on a pod it did not place, what proves the pod waits (not a count of cycles)."""
    events = k.core.list_namespaced_event(ns).items
    return next(
        (e.message for e in events if e.involved_object.name == name and e.reason == "FailedScheduling"), ""
    )


def told_gone(k: Kube, op: OperatorProcess, ns: str, name: str, *texts: str) -> None:
    """Waits until pod ``ns/name`` is told its PodGroup is gone and where it counts now: a PodGroupGone
    event whose message holds each of ``texts``."""
    wait_for(
        lambda: any(
            e.reason == "PodGroupGone"
            and e.involved_object.name == name
            and all(text in (e.message or "") for text in texts)
            for e in k.core.list_namespaced_event(ns).items
        ),
        30,
        what=f"{name} told where it counts",
        operator=op,
    )


#: Pods :func:`a_later_session` makes, numbered: their names never repeat within a test.
_LATER = itertools.count(1)


def a_later_session(k: Kube, op: OperatorProcess, ns: str) -> None:
    """Waits until a session that began after this call has run and everything it wrote is written: the
    proof that the sessions after an outcome decided otherwise (told no one again, counted no bind
    again, cleared nothing) where no object says so itself. A count of cycles is no such proof: a
    cycle with nothing new is skipped and decides nothing, and a session's writes go out after it.

    A pod in ``ns`` naming a PodGroup never made is in no job (no queue counts it, no action places or
    evicts for it), and the first session that sees it tells it so (PodGroupNotFound). Three of them,
    each made once the one before is told: one session's status writes all go out before the next
    one's begin (one status thread), and a write a session leaves to a newer one's goes out with that
    one's, so the third told proves that the first one's session wrote everything."""

    def told(name: str) -> bool:
        return any(
            e.reason == "PodGroupNotFound" and e.involved_object.name == name
            for e in k.core.list_namespaced_event(ns).items
        )

    for _ in range(3):
        name = f"later-{next(_LATER)}"
        k.pods(ns, pod(name, cpu="100m", group="never-made"))
        wait_for(partial(told, name), 30, what=f"{name} told its PodGroup does not exist", operator=op)


def queue_cpu(k: Kube, name: str) -> str:
    """The cpu Queue ``name``'s status says it has allocated ("0" when it says none)."""
    return str(((k.get_queue(name).get("status") or {}).get("allocated") or {}).get("cpu") or "0")


def queue(name: str, weight: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": weight, **spec},
    }


@dataclass
class Kube:
    """Small typed conveniences over an admin ApiClient."""

    api: client.ApiClient
    core: client.CoreV1Api = field(init=False)
    custom: client.CustomObjectsApi = field(init=False)

    def __post_init__(self) -> None:
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)

    def namespace(self, name: str) -> str:
        with contextlib.suppress(ApiException):
            self.core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        return name

    def set_config(self, text: str) -> None:
        """Write the operator's scheduler config, creating its ConfigMap the first time."""
        body = {"metadata": {"name": CONFIG_MAP, "namespace": OPERATOR_NS}, "data": {CONFIG_KEY: text}}
        try:
            self.core.replace_namespaced_config_map(CONFIG_MAP, OPERATOR_NS, body)
        except ApiException as exc:
            if exc.status != 404:
                raise
            self.core.create_namespaced_config_map(OPERATOR_NS, body)

    def nodes(self, *objs: dict[str, Any]) -> None:
        for obj in objs:
            self.core.create_node(obj)

    def pods(self, namespace: str, *objs: dict[str, Any]) -> None:
        for obj in objs:
            self.core.create_namespaced_pod(namespace, obj)

    def queue(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.custom.create_cluster_custom_object(GROUP, VERSION, "queues", obj)  # type: ignore[no-any-return]

    def podgroup(self, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
        return self.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "podgroups", obj)  # type: ignore[no-any-return]

    def get_podgroup(self, namespace: str, name: str) -> dict[str, Any]:
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "podgroups", name)  # type: ignore[no-any-return]

    def get_queue(self, name: str) -> dict[str, Any]:
        return self.custom.get_cluster_custom_object(GROUP, VERSION, "queues", name)  # type: ignore[no-any-return]

    def placements(self, namespace: str | None = None) -> dict[str, str | None]:
        items = (
            self.core.list_namespaced_pod(namespace).items
            if namespace
            else self.core.list_pod_for_all_namespaces().items
        )
        return {f"{p.metadata.namespace}/{p.metadata.name}": p.spec.node_name for p in items}

    def bound(self, namespace: str | None = None) -> dict[str, str]:
        return {k: v for k, v in self.placements(namespace).items() if v}


def record_verified(k: Kube, namespace: str, name: str) -> str | None:
    """Pod ``name``'s bound-under record, verified with the key the operator made (its Secret in
    OPERATOR_NS) and without its signature; None when it carries none, or one that does not verify."""
    from volsched.kube.recordkey import CURRENT, PREVIOUS, SECRET
    from volsched.model.admitted import BOUND_UNDER, verified

    data = k.core.read_namespaced_secret(SECRET, OPERATOR_NS).data or {}
    keys = [base64.b64decode(data[n]) for n in (CURRENT, PREVIOUS) if n in data]
    p = k.core.read_namespaced_pod(name, namespace)
    text = (p.metadata.annotations or {}).get(BOUND_UNDER)
    return verified(text, uid=p.metadata.uid, keys=keys) if text else None


def apply_file(api: client.ApiClient, path: Path) -> None:
    from kubernetes import utils

    for doc in yaml.safe_load_all(path.read_text()):
        if doc:
            try:
                utils.create_from_dict(api, doc)
            except utils.FailToCreateError as exc:
                if not all(getattr(e, "status", None) == 409 for e in exc.api_exceptions):
                    raise


def apply_crds(api: client.ApiClient) -> None:
    for path in sorted((ROOT / "crds").glob("*.yaml")):
        apply_file(api, path)
    ext = client.ApiextensionsV1Api(api)

    def established() -> bool:
        for name in ("queues.scheduling.volsched.io", "podgroups.scheduling.volsched.io"):
            crd = ext.read_custom_resource_definition(name)
            conds = {c.type: c.status for c in (crd.status.conditions or [])}
            if conds.get("Established") != "True":
                return False
        return True

    wait_for(established, 30, what="CRDs established")
    # The CRD is established before its REST endpoint serves; wait until a list succeeds.
    wait_for(
        lambda: client.CustomObjectsApi(api).list_cluster_custom_object(GROUP, VERSION, "queues") is not None,
        30,
    )


#: kube-apiserver's flags that serve Kubernetes 1.37's Workload API (scheduling.k8s.io/v1beta1 Workloads and
#: PodGroups, beta and off by default): ``real_cluster(apiserver_args=WORKLOAD_API)``.
WORKLOAD_API = ("--feature-gates=GenericWorkload=true", "--runtime-config=scheduling.k8s.io/v1beta1=true")
#: The same, and the Job controller making a Workload and a PodGroup for a Job with ``spec.scheduling``
#: (alpha in 1.37: WorkloadWithJob, with the v1alpha3 types that field uses): the apiserver's flags, and
#: kube-controller-manager's.
JOBS_GATES = "--feature-gates=GenericWorkload=true,WorkloadWithJob=true"
WORKLOAD_WITH_JOB = (
    JOBS_GATES,
    "--runtime-config=scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true",
)


@contextlib.contextmanager
def fresh_control_plane(
    *, real: bool = False, apiserver_args: Sequence[str] = (), controller_manager_args: Sequence[str] = ()
) -> Iterator[LocalControlPlane]:
    """A control plane with the CRDs and the operator's namespace; ``real``: with kube-controller-manager
    and kwok too (:meth:`LocalControlPlane.real`: controllers make and delete pods, kwok nodes run them).
    A test module that needs the real one overrides the ``cluster`` fixture with ``real_cluster()``.
    ``apiserver_args``, ``controller_manager_args``: their flags beyond the usual ones (e.g.
    :data:`WORKLOAD_API`)."""
    args = {"extra_apiserver_args": tuple(apiserver_args)}
    plane = (
        LocalControlPlane.real(extra_controller_manager_args=tuple(controller_manager_args), **args)
        if real
        else LocalControlPlane(**args)
    )
    with running(plane) as cp:
        with cp.api_client() as api:
            apply_crds(api)
            client.CoreV1Api(api).create_namespace({"metadata": {"name": OPERATOR_NS}})
        yield cp


@pytest.fixture
def cluster() -> Iterator[LocalControlPlane]:
    """A fresh control plane with the CRDs, for one test."""
    with fresh_control_plane() as cp:
        yield cp


def real_cluster(
    *, apiserver_args: Sequence[str] = (), controller_manager_args: Sequence[str] = ()
) -> Iterator[LocalControlPlane]:
    """The body of a ``cluster`` fixture that a module overrides to run on a real cluster::

    @pytest.fixture
    def cluster() -> Iterator[LocalControlPlane]:
        yield from real_cluster()
    """
    with fresh_control_plane(
        real=True, apiserver_args=apiserver_args, controller_manager_args=controller_manager_args
    ) as cp:
        yield cp


@pytest.fixture(scope="module")
def module_cluster() -> Iterator[LocalControlPlane]:
    """A control plane with the CRDs shared by one module's tests (for tests that schedule nothing)."""
    with fresh_control_plane() as cp:
        yield cp


@pytest.fixture
def k(cluster: LocalControlPlane) -> Iterator[Kube]:
    with cluster.api_client() as api:
        yield Kube(api)


@pytest.fixture
def mk(module_cluster: LocalControlPlane) -> Iterator[Kube]:
    with module_cluster.api_client() as api:
        yield Kube(api)


# --- the operator as a subprocess --------------------------------------------------------------------------


def free_port() -> int:
    """A port free a moment ago: anyone may take it before it is used. Only for "nothing listens
    there" where another listener would do no harm; an operator binds its own (``--metrics-port 0``)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def operator_on_a_thread(op: Operator) -> Iterator[Operator]:
    """``op.run`` on an event loop of a thread of its own (the operator in-process, for a test that reads
    its state), from its start until the block ends; then stopped, its thread waited for."""
    started = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        box["loop"], box["stop"] = asyncio.get_running_loop(), asyncio.Event()
        started.set()
        await op.run(box["stop"])

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    assert started.wait(30)
    try:
        yield op
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(60)


#: The operator's log line naming the port it bound (``--metrics-port 0``).
SERVING = re.compile(rb"serving /healthz.* on 127\.0\.0\.1:(\d+)")
#: Its line once aiohttp's server serves everything there (/metrics, /ui: once the cache is synced).
SERVING_ALL = re.compile(rb"serving /healthz, /readyz, /metrics and /ui on")


class OperatorProcess:
    def __init__(self, kubeconfig: Path, log_path: Path, *extra: str) -> None:
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.extra = extra
        self.port = 0  # known once started: the port the operator bound and logged
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> OperatorProcess:
        argv = [
            sys.executable, "-m", "volsched", "run",
            "--kubeconfig", str(self.kubeconfig),
            "--namespace", OPERATOR_NS,
            "--period", "0.3",
            "--lease-duration", "4",
            "--metrics-host", "127.0.0.1",
            "--metrics-port", "0",
            # the tests read /metrics and the dashboard's data as anyone on loopback; the gate itself is
            # tested with "--http-auth kubernetes" (test_operator_http_auth.py)
            "--http-auth", "none",
            *self.extra,
        ]  # fmt: skip
        log = self.log_path.open("ab")
        since = log.tell()  # operators of one test share the log: this one's lines come after here
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ})
        log.close()
        self.port = wait_for(
            lambda: self._bound_port(since), 60, what=f"operator serving (log: {self.log_path})"
        )
        wait_for(self.healthy, 60, what=f"operator /healthz (log: {self.log_path})")
        wait_for(
            lambda: self._serving_all(since), 60, what=f"operator /metrics and /ui (log: {self.log_path})"
        )
        return self

    def _serving_all(self, since: int) -> bool:
        self.check_running()
        with self.log_path.open("rb") as f:
            f.seek(since)
            return SERVING_ALL.search(f.read()) is not None

    def _bound_port(self, since: int) -> int | None:
        self.check_running()
        with self.log_path.open("rb") as f:
            f.seek(since)
            found = SERVING.search(f.read())
        return int(found.group(1)) if found else None

    def check_running(self) -> None:
        """Fail the test, with the operator's log, when its process has exited."""
        if self.proc is None or self.proc.poll() is not None:
            pytest.fail(f"operator exited with {self.proc and self.proc.returncode}:\n{self.log()}")

    def healthy(self) -> bool:
        self.check_running()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def readyz(self) -> tuple[int, str]:
        """What /readyz answers: its status and body."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2) as resp:
                return int(resp.status), resp.read().decode()
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read().decode()

    def get(self, path: str, token: str | None = None) -> tuple[int, bytes]:
        """One request to the operator's HTTP port, with ``token`` as a bearer token if given: its status
        and body. A 429 (the port's rate limit per client address; a test's requests all come from one)
        is asked again after its Retry-After, as a client should."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}")
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        for _ in range(30):
            try:
                with urllib.request.urlopen(request, timeout=10) as resp:
                    return int(resp.status), resp.read()
            except urllib.error.HTTPError as exc:
                if exc.code != 429:
                    return int(exc.code), exc.read()
                time.sleep(float(exc.headers.get("Retry-After") or 1))
        raise AssertionError(f"{path}: 429 thirty times in a row")

    def metrics(self) -> str:
        """/metrics as a scraper reads it: a 429 (the endpoint's rate limit, 5 a second per client; the
        tests' wait loops ask faster) is asked again after its Retry-After, as Prometheus would."""
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as resp:
                    return str(resp.read().decode())
            except urllib.error.HTTPError as exc:
                if exc.code != 429:
                    raise
                time.sleep(float(exc.headers.get("Retry-After") or 1))

    def metric(self, name: str, **labels: str) -> float:
        """The value of one sample (0 when absent)."""
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in self.metrics().splitlines():
            if line.startswith("#"):
                continue
            key, _, value = line.rpartition(" ")
            base, _, lab = key.partition("{")
            got = ",".join(sorted(lab.rstrip("}").split(","))) if lab else ""
            if base == name and got == want:
                return float(value)
        return 0.0

    def metric_now(self, name: str, **labels: str) -> float:
        """:meth:`metric` from a scrape that counts every session run by the call: /metrics serves what
        it scraped up to a second ago (the endpoint's own cache), and the dashboard's document says how
        many sessions were recorded, each counted in /metrics before."""
        status, body = self.get("/ui/state.json")
        assert status == 200, body
        recorded = json.loads(body)["sessions"]
        wait_for(
            lambda: self.metric("volsched_sessions_total") >= recorded,
            30,
            what=f"a scrape counting {recorded} sessions",
            operator=self,
        )
        return self.metric(name, **labels)

    def cycles(self) -> float:
        """Cycles so far, whether their session ran or was skipped (nothing new to decide: see IdleSkip)."""
        return self.metric("volsched_sessions_total") + self.metric("volsched_sessions_skipped_total")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = TAIL_LINES) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode


#: The ``start_operator`` fixture: starts ``volsched run`` with extra CLI args (and ``kubeconfig=``).
Start = Callable[..., OperatorProcess]


@pytest.fixture
def start_operator(cluster: LocalControlPlane, tmp_path: Path) -> Iterator[Start]:
    """Start ``volsched run`` (extra CLI args allowed); every one started is stopped afterwards."""
    started: list[OperatorProcess] = []

    def start(*extra: str, kubeconfig: Path | None = None) -> OperatorProcess:
        op = OperatorProcess(kubeconfig or cluster.kubeconfig_path, tmp_path / "operator.log", *extra)
        started.append(op)
        return op.start()

    yield start
    for op in started:
        op.stop()


def node_usage(kube: Kube) -> dict[str, tuple[float, float]]:
    """Per node: (sum of cpu requests of pods bound to it, allocatable cpu)."""
    from volsched.model.resources import parse_amount

    alloc = {
        n.metadata.name: parse_amount(n.status.allocatable["cpu"], where="cpu")
        for n in kube.core.list_node().items
    }
    used = dict.fromkeys(alloc, 0.0)
    for p in kube.core.list_pod_for_all_namespaces().items:
        if p.spec.node_name:
            for c in p.spec.containers:
                req = (c.resources.requests or {}) if c.resources else {}
                used[p.spec.node_name] += parse_amount(req.get("cpu", "0"), where="cpu")
    return {n: (used[n], alloc[n]) for n in alloc}


# --- Two teams on one node, and reclaim between them (the tests of what reclaim takes back, or may not) ---

#: The config with reclaim and preempt (examples/), and a namespace's default queue's label.
RECLAIM_CONFIG = (ROOT / "examples/reclaim-preempt-scheduler.yaml").read_text()
DEFAULT_QUEUE = f"{GROUP}/default-queue"
#: The annotation a bind writes: the queue, priority and class the pod was bound under (spelled here, as the
#: API has it, so that a rename in volsched is a failing test, not a silent one).
BOUND_UNDER = "scheduling.volsched.io/bound-under"


def two_teams(k: Kube, prefix: str, *, fenced: bool = False) -> tuple[str, str]:
    """Teams a and b on one node of 4 cpu, under :data:`RECLAIM_CONFIG`: queues qa and qb (each deserving
    half), namespaces ``<prefix>-a`` (default queue qa) and ``<prefix>-b``. ``fenced``: each queue takes
    only its team's namespace (label ``team``), and ``<prefix>-b`` has no default queue; else it defaults
    to qb. Returns the two namespaces."""
    k.set_config(RECLAIM_CONFIG)
    k.nodes(node("n1", cpu="4"))
    names = (f"{prefix}-a", f"{prefix}-b")
    for team, ns in zip("ab", names, strict=True):
        spec: dict[str, Any] = {"namespaceSelector": {"matchLabels": {"team": ns}}} if fenced else {}
        k.queue(queue(f"q{team}", **spec))
        labels = {"team": ns} if fenced else {}
        if team == "a" or not fenced:
            labels[DEFAULT_QUEUE] = f"q{team}"
        k.core.create_namespace(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}
        )
    return names


def qa_gang_running(k: Kube, ns_a: str, start_operator: Start) -> OperatorProcess:
    """Team a's gang a (minMember 4, in qa) of four 1-cpu pods in ``ns_a``, bound by a new operator: waits
    until the four take the node and qa counts them. Returns that operator, still running."""
    k.podgroup(ns_a, podgroup("a", 4, queue="qa"))
    k.pods(ns_a, *(pod(f"a-{i}", cpu="1", group="a") for i in range(4)))
    op = start_operator()
    wait_for(lambda: len(k.bound(ns_a)) == 4, 30, what="qa's gang takes the node", operator=op)
    wait_for(lambda: queue_cpu(k, "qa") == "4", 30, what="queue qa holding the gang", operator=op)
    return op


def team_b_reclaims(k: Kube, ns_b: str, op: OperatorProcess, *, pods: int, cpu: str) -> None:
    """Team b's gang b (minMember 1, in qb) of ``pods`` pods of ``cpu`` each: waits until all are bound,
    reclaim having taken qb's half of the node back from team a, and no node past its allocatable."""
    k.podgroup(ns_b, podgroup("b", 1, queue="qb"))
    k.pods(ns_b, *(pod(f"b-{i}", cpu=cpu, group="b") for i in range(pods)))
    wait_for(lambda: len(k.bound(ns_b)) == pods, 60, what="qb's pods bound after reclaim", operator=op)
    for used, alloc in node_usage(k).values():
        assert used <= alloc + 1e-9


# --- Volcano's CRDs (minimal ones: the group, kinds and scopes Volcano's have; any fields) ---

V, VV = "scheduling.volcano.sh", "v1beta1"
OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _crd(plural: str, kind: str, scope: str, *, status_subresource: bool) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": VV,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": OPEN, "status": OPEN}}},
    }
    if status_subresource:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{V}"},
        "spec": {
            "group": V,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"},
            "scope": scope,
            "versions": [version],
        },
    }


def install_volcano_crds(api: client.ApiClient) -> None:
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(
        _crd("podgroups", "PodGroup", "Namespaced", status_subresource=False)
    )
    ext.create_custom_resource_definition(_crd("queues", "Queue", "Cluster", status_subresource=True))
    custom = client.CustomObjectsApi(api)
    wait_for(
        lambda: custom.list_cluster_custom_object(V, VV, "queues") is not None, 30, what="Volcano queues"
    )
    wait_for(lambda: custom.list_cluster_custom_object(V, VV, "podgroups") is not None, 30, what="podgroups")


def volcano_podgroup(name: str, min_member: int, queue: str, cpu: str = "1") -> dict[str, Any]:
    """A PodGroup as Spark's PodGroup template or the MPI operator writes it (minResources: the gang's)."""
    total = f"{float(cpu.rstrip('m')) / (1000 if cpu.endswith('m') else 1) * min_member:g}"
    return {
        "apiVersion": f"{V}/{VV}",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member, "queue": queue, "minResources": {"cpu": total}},
    }
