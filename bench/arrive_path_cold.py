"""An arriving pod's two ways outside the session, step by step, in one process and cold: the pod watch's
event (the line decoded and pruned, dispatched, the cache's apply, the doorbell) and the lone pod's bind
up to its request's bytes on the socket (the port, the writer, the request's head, the connection's check,
the send).

Between two arriving pods the apiserver, etcd and the other processes run and take the processor's
caches: each step then costs several times its cost back to back, and the live stages
(``bench/arriving_latency.py``) are of that cold cost. So before each pod's event and before its bind this
bench takes the caches itself (it writes ``--thrash`` MiB, which should exceed the last-level cache, and
runs some unrelated Python), then stamps each step's start with the thread's CPU clock (a wrapper around
each step's function: the wrappers' own cost is in the figures, the same for every step). ``--warm``
leaves the caches alone (back to back).

It wires the operator's own pieces: a :class:`~volsched.kube.watch.ListWatch` with the pod's pruned
decoder into a :class:`~volsched.cache.feeder.Feeder` (as the operator's untraced pod handler), and a
background :class:`~volsched.kube.port.KubePort` whose lone bind is sent on this thread
(:meth:`KubePort.bind` with ``lone``), over a :class:`~volsched.kube.writer.KubeWriter` whose fence is a
stand-in that is always open. It is not the live path: no apiserver (each bind is answered by
``pod_path_cpu.py --answer-binds``, plain HTTP on loopback, not TLS), no session (lane ``arrive``'s), no
pacing or wake-up (the doorbell's listener does nothing). With ``--record`` each bind carries the
standing-alone record signed with a key, as the operator's do.

    .venv/bin/python bench/arrive_path_cold.py [--pods 300] [--thrash 48] [--warm] [--record]
"""

from __future__ import annotations

import argparse
import functools
import gc
import itertools
import json
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from builders import pod_body  # noqa: E402
from kubernetes import client  # noqa: E402
from machine import describe  # noqa: E402

import volsched.cache.state as state_module  # noqa: E402
import volsched.kube.rest as rest_module  # noqa: E402
from volsched.cache.doorbell import Doorbell  # noqa: E402
from volsched.cache.feeder import Feeder  # noqa: E402
from volsched.cache.state import ClusterState  # noqa: E402
from volsched.framework.decisions import Bind  # noqa: E402
from volsched.kube.lister import WATCHED  # noqa: E402
from volsched.kube.port import KubePort  # noqa: E402
from volsched.kube.prune import EVENT_DECODERS, prune_pod  # noqa: E402
from volsched.kube.watch import ListWatch  # noqa: E402
from volsched.kube.writer import KubeWriter, WriterSettings  # noqa: E402
from volsched.model.admitted import STANDING_ALONE  # noqa: E402
from volsched.model.vocabulary import SCHEDULER_NAME  # noqa: E402

NS = "bench"
PODS = next(k for k in WATCHED if k.kind == "Pod")
#: Pods taken (event and bind) before the measured ones: imports, first calls, the connection opened.
WARM_UP = 200
SENT = "sent"


def added_line(i: int) -> bytes:
    """Pod ``i``'s ADDED event as the apiserver writes it on a watch: the bench's pod as created, with what
    the apiserver adds (uid, resourceVersion, the managed fields, defaults, the service account's volume,
    the default tolerations, a Pending status)."""
    pod = pod_body(f"arr-{i:06d}", SCHEDULER_NAME)
    stamp = "2026-12-02T13:50:01Z"
    pod["metadata"].update(
        namespace=NS,
        uid=f"5c3b2a7e-1f0d-4c8e-9a6b-{i:012d}",
        resourceVersion=str(1000 + i),
        creationTimestamp=stamp,
        managedFields=[
            {
                "manager": "python",
                "operation": "Update",
                "apiVersion": "v1",
                "time": stamp,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {"f:containers": {'k:{"name":"main"}': {".": {}, "f:image": {}, "f:name": {}}}},
                },
            }
        ],
    )
    mount = "/var/run/secrets/kubernetes.io/serviceaccount"
    container = pod["spec"]["containers"][0]
    container.update(
        volumeMounts=[{"name": "kube-api-access-x", "readOnly": True, "mountPath": mount}],
        terminationMessagePath="/dev/termination-log",
        terminationMessagePolicy="File",
        imagePullPolicy="IfNotPresent",
    )
    token = {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    ca = {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}
    pod["spec"].update(
        volumes=[{"name": "kube-api-access-x", "projected": {"sources": [token, ca], "defaultMode": 420}}],
        restartPolicy="Always",
        dnsPolicy="ClusterFirst",
        serviceAccountName="default",
        serviceAccount="default",
        securityContext={},
        tolerations=[
            {
                "key": f"node.kubernetes.io/{t}",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
            for t in ("not-ready", "unreachable")
        ],
        priority=0,
        enableServiceLinks=True,
        preemptionPolicy="PreemptLowerPriority",
    )
    pod["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    return json.dumps({"type": "ADDED", "object": pod}, separators=(",", ":")).encode()


class OpenFence:
    """A fence always open (the Lease's place in the writer), renewed never."""

    acquired_at = 1.0

    def time_left(self) -> float:
        return 10.0

    def call_timeout(self, wanted: float) -> float:
        return min(wanted, 12.0)

    def renew_if_due(self) -> bool:
        return True


class Stamps:
    """Each step's start, by the thread's CPU clock (ns), in the order met."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, int]] = []

    def mark(self, name: str) -> None:
        self.marks.append((name, time.thread_time_ns()))

    def before(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def stamped(*args: Any, **kwargs: Any) -> Any:
            self.mark(name)
            return fn(*args, **kwargs)

        return stamped

    def after(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def stamped(*args: Any, **kwargs: Any) -> Any:
            out = fn(*args, **kwargs)
            self.mark(name)
            return out

        return stamped


def wrap(stamps: Stamps) -> None:
    """Each step's function wrapped to stamp its start (a step ends where the next starts)."""
    for owner, attr, name in (
        (ListWatch, "_dispatch", "dispatch (key, known) "),
        (Feeder, "apply", "feeder.apply"),
        (ClusterState, "apply", "state.apply"),
        (ClusterState, "_build_task", "the pod's task built"),
        (state_module, "_pod_ring", "tables, ring"),
        (Doorbell, "ring", "doorbell.ring"),
        (KubePort, "bind", "port.bind"),
        (KubeWriter, "bind", "writer.bind (body)"),
        (KubeWriter, "_send", "writer._send (fence)"),
        (rest_module.LeanRest, "request", "rest.request (JSON)"),
        (rest_module.LeanRest, "_head", "the head"),
        (rest_module, "_dropped", "connection checked"),
    ):
        setattr(owner, attr, stamps.before(name, getattr(owner, attr)))
    for owner, attr, name, wrapper in (
        (rest_module.LeanRest, "_connection", "the send", stamps.after),  # (its return: the sendall next)
        (rest_module, "_answer_begun", SENT, stamps.before),  # (called just after the sendall)
    ):
        setattr(owner, attr, wrapper(name, getattr(owner, attr)))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pods", type=int, default=300, help="pods measured (after the warm-up's)")
    p.add_argument("--thrash", type=int, default=48, help="MiB written between steps (the caches taken)")
    p.add_argument("--warm", action="store_true", help="the caches left alone: back to back")
    p.add_argument("--record", action="store_true", help="each bind with the standing-alone record, signed")
    args = p.parse_args()
    print("machine:", describe())
    junk = bytearray(args.thrash << 20)

    def thrash() -> None:
        if args.warm:
            return
        for at in range(0, len(junk), 64):
            junk[at] ^= 1
        sorted(str(i * 7919 % 1000) for i in range(3000))

    state = ClusterState()
    feeder = Feeder(state)
    state.doorbell.listen(lambda: None)
    prelisted = threading.Event()
    prelisted.set()

    def on_event(type_: str, obj: dict[str, Any]) -> None:  # the operator's untraced pod handler
        if prelisted.is_set():
            feeder.apply("Pod", obj)

    watch = ListWatch(None, PODS, on_event=on_event, prune=prune_pod, decode_event=EVENT_DECODERS["Pod"])
    answers = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "pod_path_cpu.py"), "--answer-binds"], stdout=subprocess.PIPE
    )
    try:
        assert answers.stdout is not None
        cfg = client.Configuration()
        cfg.host = f"http://127.0.0.1:{int(answers.stdout.readline())}"
        cfg.api_key = {"authorization": "bench-token"}
        cfg.api_key_prefix = {"authorization": "Bearer"}
        with client.ApiClient(cfg) as api:
            writer = KubeWriter(api, WriterSettings(), fence=OpenFence())
            if args.record:
                writer.record_key = b"k" * 32
            port = KubePort(writer, background=True)
            record = STANDING_ALONE if args.record else ""

            stamps = Stamps()

            def take(i: int) -> None:
                state.doorbell.take()  # (as the session does: the next pod rings again)
                key = f"{NS}/arr-{i:06d}"
                raw = state.raw_pods[key]
                bind = Bind(pod=key, uid=raw["metadata"]["uid"], node="node-1", bound_under=record)
                stamps.marks.clear()
                port.bind([bind], {key: raw}, lone=True)

            for i in range(WARM_UP):
                watch._follow([added_line(i)])
                take(i)
            gc.collect()
            gc.freeze()  # as the operator does once it listed everything
            lines = [added_line(i) for i in range(WARM_UP, WARM_UP + args.pods)]
            wrap(stamps)
            watch.decode_event = stamps.before("decoded, pruned", EVENT_DECODERS["Pod"])
            steps: dict[tuple[str, str], list[int]] = defaultdict(list)
            totals: dict[str, list[int]] = defaultdict(list)
            gc.disable()  # (its runs are the tail's, not each step's)
            for i, line in enumerate(lines, WARM_UP):
                for way in ("watch", "bind"):
                    thrash()
                    stamps.marks.clear()
                    stamps.mark("the line read")
                    if way == "watch":
                        watch._follow([line])
                    else:
                        take(i)  # (its marks begin at port.bind: the session made the Bind)
                    stamps.mark("end")
                    marks = stamps.marks
                    if way == "bind":
                        names = [m[0] for m in marks]
                        end = names.index(SENT)
                        totals["after the send (answer, outcome)"].append(marks[-1][1] - marks[end][1])
                        marks = marks[: end + 1]
                    for (name, t0), (_, t1) in itertools.pairwise(marks):
                        steps[(way, name)].append(t1 - t0)
                    totals[
                        "the watch: line to doorbell and back" if way == "watch" else "the bind: to the send"
                    ].append(marks[-1][1] - marks[0][1])
            gc.enable()
            port.close()
            writer.close()
    finally:
        answers.kill()
        answers.wait()
    mode = "warm (back to back)" if args.warm else f"cold ({args.thrash} MiB written before each)"
    print(f"{args.pods} pods, {mode}{', signed record' if args.record else ''}; thread CPU, us: p50 (mean)")
    for (way, name), xs in steps.items():
        print(f"  {way:5s}  {name:26s} {statistics.median(xs) / 1e3:7.1f} ({statistics.fmean(xs) / 1e3:.1f})")
    for name, xs in totals.items():
        print(f"  total  {name:38s} {statistics.median(xs) / 1e3:7.1f} ({statistics.fmean(xs) / 1e3:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
