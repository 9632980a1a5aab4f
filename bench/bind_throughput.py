"""Bind throughput on a real kube-apiserver: volsched, kube-scheduler and (when asked) a bare binder.

For every mode and scheduler in turn, a fresh local control plane (etcd + kube-apiserver from
hack/controlplane; a fresh one each, so that every scheduler meets the same empty apiserver and etcd) gets
``--nodes`` Ready nodes and ``--pods`` pending pods in namespace ``bench`` whose ``schedulerName`` is that
scheduler's, and the scheduler is started as a subprocess:

* volsched:        ``volsched run`` with its default configuration (plus kubeconfig, namespace, http port 0);
* kube-scheduler:  the binary hack/controlplane builds, with a KubeSchedulerConfiguration that raises the
                   client's qps/burst to 5000 and turns leader election off;
* ceiling:         ``loadgen bind`` (bench/loadgen, Go, built on first use): watches the pending pods and
                   posts ``pods/binding`` round-robin over the nodes, many requests in flight over HTTP/2,
                   scheduling nothing; ``ceiling-python`` (``--only``) is ``bench/bare_binder.py``, the
                   same in Python (aiohttp, several processes): in the same runs it bound slower than
                   the Go one with more CPU, CPU the apiserver then lacks on 2 cores
                   (docs/benchmarks/2026-11-29.md).

Modes: ``backlog`` creates every pod before the scheduler starts; ``arriving`` starts the scheduler, waits
until it is ready, then creates the pods at a steady ``--rate`` (pods/s; ``loadgen create``, many requests
in flight, so that the client is not the bottleneck: on 2 cores the apiserver's own cost of a create may
be, so the report prints the rate the pods did arrive at).

How it is measured (the same for all three):

* binds are seen by one watch on the namespace's pods, in a process of its own (``loadgen watch``, Go;
  a Python process without Go), started before any pod is created: a pod is bound when an event first
  shows its ``spec.nodeName``; its bind time is when that event was received (wall clock), its creation
  time when its first event was received;
* start: just before the scheduler's process is spawned; ready: volsched's ``/healthz`` answers 200 (cache
  synced), kube-scheduler's ``/readyz``, the bare binder's processes all print ``ready``;
* pods/s: bound pods / (last bind - first bind); time to first bind: first bind - start (and - ready);
* latency, p50/p99 over all bound pods: backlog: bind - start (every pod waits from the scheduler's
  start, its startup included); arriving: bind - creation;
* CPU s per 1,000 pods: utime+stime (+ that of waited-for children) of the scheduler's process tree
  (``/proc/<pid>/stat``, sampled every 0.5 s, last sample when the last pod is bound) / (bound / 1000),
  startup included; peak RSS: the sum of ``VmHWM`` over the tree (one process: its own peak);
* ratios: to kube-scheduler and to the ceiling of the same mode in the same invocation.

A run ends when every pod is bound, or when no pod was bound for ``--stall`` seconds (then it reports
what was bound). Every process started is killed on exit (SIGTERM/SIGINT included).

    python bench/bind_throughput.py [--quick | --nodes 1000 --pods 10000] [--modes backlog,arriving]
        [--only volsched,kube-scheduler,ceiling,ceiling-python] [--rate 500] [--keep-logs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import multiprocessing
import multiprocessing.synchronize
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from bindstats import (  # noqa: E402
    RunFigures,
    TreeUsage,
    fmt_seconds,
    parse_watch_line,
    ratio,
    run_figures,
    thread_cpu,
)
from builders import pod_body  # noqa: E402
from machine import describe  # noqa: E402

from volsched_dev.devcluster import LocalControlPlane  # noqa: E402

NAMESPACE = "bench"
OPERATOR_NS = "volsched-system"
SCHEDULERS = ("volsched", "kube-scheduler", "ceiling", "ceiling-python")
#: Run unless --only says otherwise. The bare binders are not among them: on a shared 2-core machine the
#: Go binder's rate moved widely from run to run (docs/benchmarks/2026-11-29-kube-scheduler-comparison.md),
#: the apiserver's share of the processors and not a bound on what a scheduler can do, so "x ceiling" was
#: no measure; the ratio to kube-scheduler of the same invocation is. ``--only ...,ceiling`` still runs it (and its column).
DEFAULT_ONLY = ("volsched", "kube-scheduler")
SCHEDULER_NAMES = {
    "volsched": "volsched",
    "kube-scheduler": "bench-kube-scheduler",
    "ceiling": "bench-binder",
    "ceiling-python": "bench-binder",
}
MODES = ("backlog", "arriving")


# --------------------------------------------------------------------------- objects


def prepare_cluster(api: Any) -> None:
    """What every run needs on a fresh control plane before nodes and pods: the benchmark's and the
    operator's namespaces, and volsched's CRDs."""
    from kubernetes import client, utils

    core: Any = client.CoreV1Api(api)  # (given dicts: the client serialises them)
    for ns in (NAMESPACE, OPERATOR_NS):
        core.create_namespace({"metadata": {"name": ns}})
    for path in sorted((ROOT / "crds").glob("*.yaml")):
        utils.create_from_yaml(api, str(path))  # type: ignore[no-untyped-call]


def node_body(name: str, pods_per_node: int) -> dict[str, Any]:
    """A Ready node with room for ``pods_per_node`` pods of ``builders.pod_body`` (and twice as many to
    spare)."""
    room = max(110, 2 * pods_per_node)
    res = {
        "cpu": str(max(64, math.ceil(room * 0.1))),
        "memory": f"{max(256, room // 4)}Gi",
        "pods": str(room),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": res,
            "allocatable": res,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "bench"}],
        },
    }


@dataclass(frozen=True)
class Conn:
    """How a child process reaches the apiserver (picklable)."""

    server: str
    ca: str
    token: str


# --------------------------------------------------------------------------- creating objects (processes)


async def _create_all(
    conn: Conn, kind: str, bodies: list[tuple[float, dict[str, Any]]], conns: int, failed: Any
) -> None:
    import aiohttp

    ctx = ssl.create_default_context(cafile=conn.ca)
    headers = {"Authorization": f"Bearer {conn.token}", "Content-Type": "application/json"}
    url = (
        f"{conn.server}/api/v1/nodes"
        if kind == "node"
        else f"{conn.server}/api/v1/namespaces/{NAMESPACE}/pods"
    )
    sem = asyncio.Semaphore(conns)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=ctx, limit=conns), headers=headers, timeout=timeout
    ) as http:

        async def post(data: bytes) -> None:
            try:
                for attempt in range(30):
                    try:
                        async with http.post(url, data=data) as resp:
                            await resp.read()
                            if resp.status in (200, 201, 409):
                                return
                            if resp.status not in (429, 500, 503, 504):
                                break
                    except (aiohttp.ClientError, TimeoutError):
                        pass
                    await asyncio.sleep(min(1.0, 0.05 * 2**attempt))
                with failed.get_lock():
                    failed.value += 1
            finally:
                sem.release()

        tasks = set()
        for due, body in bodies:
            delay = due - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            await sem.acquire()
            task = asyncio.create_task(post(json.dumps(body, separators=(",", ":")).encode()))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        while tasks:
            await asyncio.gather(*list(tasks))


def _creator(
    conn: Conn, kind: str, bodies: list[tuple[float, dict[str, Any]]], conns: int, failed: Any
) -> None:
    _die_with_parent()
    asyncio.run(_create_all(conn, kind, bodies, conns, failed))


class Creation:
    """Objects being created, by ``loadgen create`` (Go) or by Python processes (:func:`_creator`)."""

    def __init__(self, procs: list[Any], failed: Any, kind: str, log: Path | None = None) -> None:
        self.procs, self._failed, self.kind, self.log = procs, failed, kind, log

    def wait(self) -> None:
        for proc in self.procs:
            if isinstance(proc, subprocess.Popen):
                proc.wait()
                if proc in _CHILDREN:
                    _CHILDREN.remove(proc)
            else:
                proc.join()

    def kill(self) -> None:
        for proc in self.procs:
            if isinstance(proc, subprocess.Popen):
                kill_tree(proc, grace=0.0)
            else:
                proc.kill()

    @property
    def failed(self) -> int:
        """Objects given up on (after 30 attempts); a creation killed before it ended counts none."""
        if self._failed is not None:
            return int(self._failed.value)
        assert self.log is not None
        m = re.search(r"^failed (\d+)$", self.log.read_text(errors="replace"), re.MULTILINE)
        return int(m.group(1)) if m else 0


def start_creation(
    conn: Conn,
    kind: str,
    bodies: list[dict[str, Any]],
    *,
    args: argparse.Namespace,
    workdir: Path,
    t0: float = 0.0,
    rate: float | None = None,
) -> Creation:
    """Create ``bodies`` (Go's loadgen when there is one, else ``--create-procs`` Python processes);
    with a ``rate`` the i-th is due at ``t0 + i / rate``."""
    path = "/api/v1/nodes" if kind == "node" else f"/api/v1/namespaces/{NAMESPACE}/pods"
    if args.loadgen is not None and args.creator == "go":
        file = workdir / f"{kind}s.jsonl"
        file.write_text("".join(json.dumps(b, separators=(",", ":")) + "\n" for b in bodies))
        argv = [
            str(args.loadgen), "create", "-server", conn.server, "-ca", conn.ca,
            "-token-file", str(_token_file(conn, workdir)), "-path", path, "-bodies", str(file),
            "-conns", str(args.create_conns * args.create_procs),
        ]  # fmt: skip
        if rate:
            argv += ["-rate", str(rate), "-t0", repr(t0)]
        log = workdir / f"create-{kind}s.log"
        return Creation([spawn(argv, log)], None, kind, log)
    ctx = multiprocessing.get_context("spawn")
    failed = ctx.Value("i", 0)
    shares: list[list[tuple[float, dict[str, Any]]]] = [[] for _ in range(args.create_procs)]
    for i, body in enumerate(bodies):
        shares[i % args.create_procs].append((t0 + i / rate if rate else 0.0, body))
    started = []
    for share in shares:
        proc = ctx.Process(target=_creator, args=(conn, kind, share, args.create_conns, failed), daemon=True)
        proc.start()
        started.append(proc)
    return Creation(started, failed, kind)


def create(
    conn: Conn, kind: str, bodies: list[dict[str, Any]], *, args: argparse.Namespace, workdir: Path
) -> None:
    creation = start_creation(conn, kind, bodies, args=args, workdir=workdir)
    creation.wait()
    codes = [p.returncode if isinstance(p, subprocess.Popen) else p.exitcode for p in creation.procs]
    if creation.failed or any(codes):
        raise RuntimeError(f"{kind}s could not be all created (exit codes {codes}; see {workdir})")


def _token_file(conn: Conn, workdir: Path) -> Path:
    """The token in ``workdir``'s file, which each Go process spawned reads once at its start. Written
    whole beside it and renamed over it: written in place (truncated, then written), a process spawned
    just before (the bench's watch, with the bare binder spawned next) could read it empty, and then
    asked with no token, refused every time, for the whole run."""
    path = workdir / "admin.token"
    fd, new = tempfile.mkstemp(dir=workdir, prefix=".admin.token.")  # (mode 0600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(conn.token)
        os.replace(new, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(new)
        raise
    return path


def build_loadgen() -> Path | None:
    """``bench/loadgen`` built with the Go toolchain hack/controlplane uses, cached by its sources' hash
    in ~/.cache/volsched/bench (older builds are left there: another checkout may be running one); None
    without Go."""
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None
    )
    src = BENCH / "loadgen"
    digest = hashlib.sha256(b"".join((src / f).read_bytes() for f in ("go.mod", "main.go"))).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "volsched" / "bench"
    binary = cache / f"loadgen-{digest}"
    if binary.is_file():
        return binary
    if go is None:
        return None
    cache.mkdir(parents=True, exist_ok=True)
    tmp = cache / f".loadgen-{os.getpid()}"
    subprocess.run(
        [go, "build", "-trimpath", "-o", str(tmp), "."],
        cwd=src,
        check=True,
        env={**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"},
    )
    tmp.replace(binary)
    return binary


# --------------------------------------------------------------------------- the bind watch (a process)

_TYPE = re.compile(rb'^\{"type":"([A-Z]+)"')
_NAME = re.compile(rb'"name":"([^"]+)"')
_NODE = re.compile(rb'"nodeName":"([^"]+)"')
_RV = re.compile(rb'"resourceVersion":"([^"]+)"')


def _watch_proc(
    conn: Conn,
    out: str,
    added: Any,
    bound: Any,
    stop: multiprocessing.synchronize.Event,
    rv: str,
    before: frozenset[str],
    namespace: str,
) -> None:
    """Watch the namespace's pods from ``rv``; count and time the pods first seen and their first binds,
    but none of ``before`` (there before the watch: a scheduler's status write on one is no creation);
    on ``stop`` write ``{"added": {name: t}, "bound": {name: [t, node]}}`` to ``out``."""
    import http.client
    import urllib.parse

    _die_with_parent()
    t_added: dict[str, float] = {}
    t_bound: dict[str, tuple[float, str]] = {}
    lock = threading.Lock()

    def read() -> None:
        nonlocal rv
        ctx = ssl.create_default_context(cafile=conn.ca)
        host = urllib.parse.urlsplit(conn.server)
        while not stop.is_set():
            c = http.client.HTTPSConnection(host.hostname or "127.0.0.1", host.port, context=ctx)
            query = urllib.parse.urlencode({"watch": "1", "resourceVersion": rv, "timeoutSeconds": "3600"})
            try:
                c.request(
                    "GET",
                    f"/api/v1/namespaces/{namespace}/pods?{query}",
                    headers={"Authorization": f"Bearer {conn.token}"},
                )
                resp = c.getresponse()
                if resp.status != 200:  # 410 Gone: too far behind; take the whole state again
                    rv = "" if resp.status == 410 else rv
                    time.sleep(0.2)
                    continue
                while True:
                    line = resp.readline()
                    now = time.time()
                    if not line:
                        break
                    m = _TYPE.match(line)
                    if m is None or m.group(1) not in (b"ADDED", b"MODIFIED"):
                        continue
                    name_m, node_m, rv_m = _NAME.search(line), _NODE.search(line), _RV.search(line)
                    if name_m is None:
                        continue
                    if rv_m is not None:
                        rv = rv_m.group(1).decode()
                    name = name_m.group(1).decode()
                    if name in before:
                        continue
                    with lock:
                        if name not in t_added:
                            t_added[name] = now
                            with added.get_lock():
                                added.value += 1
                        if node_m is not None and name not in t_bound:
                            t_bound[name] = (now, node_m.group(1).decode())
                            with bound.get_lock():
                                bound.value += 1
            except (OSError, http.client.HTTPException):
                time.sleep(0.2)
            finally:
                c.close()

    threading.Thread(target=read, daemon=True).start()
    stop.wait()
    with lock:
        data = {"added": dict(t_added), "bound": {k: list(v) for k, v in t_bound.items()}}
    Path(out).write_text(json.dumps(data))


@dataclass
class PythonWatch:
    """The watch in a Python process (:func:`_watch_proc`), when there is no Go to build loadgen with."""

    proc: multiprocessing.process.BaseProcess
    added: Any
    bound: Any
    stop: multiprocessing.synchronize.Event
    out: Path

    def counts(self) -> tuple[int, int]:
        """(pods seen created, pods seen bound) so far."""
        return int(self.added.value), int(self.bound.value)

    def result(self) -> tuple[dict[str, float], dict[str, tuple[float, str]]]:
        """(name -> creation seen, name -> (bind seen, node)); stops the watch."""
        self.stop.set()
        self.proc.join(60)
        data = json.loads(self.out.read_text())
        return dict(data["added"]), {k: (float(v[0]), str(v[1])) for k, v in data["bound"].items()}


class GoWatch:
    """``loadgen watch`` appending to a file, which :meth:`counts` reads as it grows (none of ``before``,
    the pods there before the watch: loadgen writes one seen first in a status update as seen)."""

    def __init__(self, proc: subprocess.Popen[bytes], out: Path, before: frozenset[str]) -> None:
        self.proc, self.out, self.before = proc, out, before
        self.added: dict[str, float] = {}
        self.bound: dict[str, tuple[float, str]] = {}
        self._offset = 0

    def _read(self) -> None:
        try:
            with self.out.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1  # complete lines only
        self._offset += end
        for line in data[:end].decode().splitlines():
            parse_watch_line(line, self.added, self.bound, skip=self.before)

    def counts(self) -> tuple[int, int]:
        self._read()
        return len(self.added), len(self.bound)

    def result(self) -> tuple[dict[str, float], dict[str, tuple[float, str]]]:
        kill_tree(self.proc, grace=0.0)
        self._read()
        return self.added, self.bound


def start_watch(
    conn: Conn,
    rv: str,
    rundir: Path,
    loadgen: Path | None,
    *,
    before: frozenset[str] = frozenset(),
    namespace: str = NAMESPACE,
) -> PythonWatch | GoWatch:
    """Watch the benchmark's pods from ``rv`` in a process of its own (loadgen, else Python); the pods
    named in ``before`` (there at ``rv``: pods that never fit, say) are neither created nor bound by the
    run, whatever events they get."""
    if loadgen is not None:
        out = rundir / "watch.txt"
        argv = [
            str(loadgen), "watch", "-server", conn.server, "-ca", conn.ca,
            "-token-file", str(_token_file(conn, rundir)), "-namespace", namespace, "-rv", rv, "-out", str(out),
        ]  # fmt: skip
        return GoWatch(spawn(argv, rundir / "watch.log"), out, before)
    ctx = multiprocessing.get_context("spawn")
    # Kept by the PythonWatch: a shared value the parent lets go of is unlinked, and a child still
    # starting then cannot open it (FileNotFoundError).
    added, bound = ctx.Value("i", 0), ctx.Value("i", 0)
    stop = ctx.Event()
    out = rundir / "binds.json"
    proc = ctx.Process(
        target=_watch_proc, args=(conn, str(out), added, bound, stop, rv, before, namespace), daemon=True
    )
    proc.start()
    return PythonWatch(proc, added, bound, stop, out)


# --------------------------------------------------------------------------- processes and cleanup


def _die_with_parent() -> None:
    """Have Linux SIGKILL this process when its parent dies (no orphans after a crash of the bench)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


_CHILDREN: list[subprocess.Popen[bytes]] = []


def spawn(
    argv: list[str], log: Path, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.Popen[bytes]:
    with log.open("ab") as f:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=f,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,  # its own process group: killed as a whole
            preexec_fn=_die_with_parent,
        )
    _CHILDREN.append(proc)
    return proc


def kill_tree(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM the process group, then SIGKILL what is left of it after ``grace`` seconds."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)
    if proc in _CHILDREN:
        _CHILDREN.remove(proc)


def exit_on_sigterm() -> None:
    """A SIGTERM ends the bench as an exception would (SystemExit, status 128 + 15, raised in the main
    thread): every ``finally`` and context on the way out runs, so the children are killed (``kill_all``)
    and the round's control plane stopped; by default it ended the process where it stood. A SIGTERM
    while that cleanup runs is ignored (SIGKILL still ends it)."""

    def on_signal(signum: int, _frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)


def kill_all() -> None:
    for proc in list(_CHILDREN):
        kill_tree(proc, grace=3.0)
    for child in multiprocessing.active_children():
        child.kill()


# --------------------------------------------------------------------------- the schedulers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _http_ok(url: str, *, insecure: bool = False) -> bool:
    ctx = None
    if insecure:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:
            return bool(resp.status == 200)
    except (OSError, urllib.error.URLError):
        return False


@dataclass
class Scheduler:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    ready: Callable[[], bool]
    #: kube-scheduler's secure port (0: volsched's, or not known).
    port: int = 0


def volsched_env(source: Path) -> dict[str, str]:
    """The environment ``volsched run`` from ``source`` is started in, its bytecode compiled first (into
    the checkout's ``__pycache__``, which git ignores), as an installed copy's is at install. Run with
    ``PYTHONDONTWRITEBYTECODE`` (a development shell's, or the image's), a checkout's every start
    compiled every module of volsched again (counted in its start-up until then:
    docs/benchmarks/2026-11-29-kube-scheduler-comparison.md), which no installed copy pays and
    kube-scheduler has no counterpart of."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(source)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(source / "volsched")], env=env, check=True, cwd=source
    )
    return env


def start_volsched(
    cp: LocalControlPlane,
    log: Path,
    source: Path,
    extra: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Scheduler:
    argv = [
        sys.executable, "-m", "volsched", "run",
        "--kubeconfig", str(cp.kubeconfig_path),
        "--namespace", OPERATOR_NS,
        "--metrics-host", "127.0.0.1",
        "--metrics-port", "0",
        *extra,
    ]  # fmt: skip
    # python -m puts the working directory first on the path: the source's, not this checkout's.
    proc = spawn(argv, log, env=env or volsched_env(source), cwd=source)
    port: list[int] = []

    def ready() -> bool:
        if not port:
            m = re.search(r"serving /healthz.* on [\d.]+:(\d+)", log.read_text(errors="replace"))
            if m is None:
                return False
            port.append(int(m.group(1)))
        return _http_ok(f"http://127.0.0.1:{port[0]}/healthz")

    return Scheduler("volsched", proc, log, ready)


def start_kube_scheduler(
    cp: LocalControlPlane, log: Path, workdir: Path, *, feature_gates: str = "", profiling: bool = False
) -> Scheduler:
    """kube-scheduler on ``cp`` (``feature_gates``: its ``--feature-gates``, e.g. ``GenericWorkload=true``;
    ``profiling``: its ``/debug/pprof`` answered without credentials, as its health is)."""
    binary = cp.scheduler_binary
    if binary is None:
        raise RuntimeError("no kube-scheduler next to kube-apiserver (run hack/controlplane/build.sh)")
    config = workdir / "kube-scheduler.yaml"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "clientConnection": {"kubeconfig": str(cp.kubeconfig_path), "qps": 5000, "burst": 5000},
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": SCHEDULER_NAMES["kube-scheduler"]}],
            }
        )
    )
    port = _free_port()
    argv = [str(binary), f"--config={config}", "--bind-address=127.0.0.1", f"--secure-port={port}", "--v=1"]
    if feature_gates:
        argv.append(f"--feature-gates={feature_gates}")
    if profiling:
        argv.append("--authorization-always-allow-paths=/healthz,/readyz,/livez,/debug/pprof/*")
    proc = spawn(argv, log)
    return Scheduler(
        "kube-scheduler", proc, log, lambda: _http_ok(f"https://127.0.0.1:{port}/readyz", insecure=True), port
    )


def start_ceiling(
    cp: LocalControlPlane, log: Path, workdir: Path, *, args: argparse.Namespace, python: bool
) -> Scheduler:
    conn = Conn(cp.host, str(cp.ca_cert_path), cp.admin_token)
    common = [
        "-server", cp.host, "-ca", str(cp.ca_cert_path), "-token-file", str(_token_file(conn, workdir)),
        "-namespace", NAMESPACE, "-scheduler-name", SCHEDULER_NAMES["ceiling"],
    ]  # fmt: skip
    if not python and args.loadgen is not None:
        argv = [str(args.loadgen), "bind", *common, "-conns", str(args.binder_conns * args.binder_procs)]
        procs = 1
    else:
        argv = [
            sys.executable, str(BENCH / "bare_binder.py"), *("-" + a if a.startswith("-") else a for a in common),
            "--procs", str(args.binder_procs), "--conns", str(args.binder_conns),
        ]  # fmt: skip
        procs = args.binder_procs
    proc = spawn(argv, log)
    name = "ceiling-python" if python else "ceiling"
    return Scheduler(name, proc, log, lambda: log.read_text(errors="replace").count("ready") >= procs)


# --------------------------------------------------------------------------- one run


@dataclass
class Result:
    scheduler: str
    mode: str
    figures: RunFigures
    ready: float
    cpu_per_1000: float
    peak_rss: int
    stalled: bool
    #: Arriving mode: pods seen created per second (between the first and the last creation seen).
    arrived: float = math.nan
    failed_creates: int = 0
    #: The 1-minute load average when the run ended (how much else ran: this machine has 2 cores).
    load: float = math.nan
    #: The bench watch's clocks (wall): pod name -> first seen created; pod name -> bind seen.
    added: dict[str, float] = field(default_factory=dict)
    binds: dict[str, float] = field(default_factory=dict)
    #: The scheduler's log (kept while the run's work directory is).
    log: Path | None = None
    #: The apiserver's own time on the binds (``apiserver_request_duration_seconds`` of POST
    #: pods/binding, from the request read to the answer written): how many, and their seconds summed.
    api_binds: tuple[int, float] = (0, 0.0)
    #: CPU seconds of the scheduler's process tree when it became ready (its start-up), and from then
    #: to the last bind (``cpu_per_1000`` is their sum over the pods bound, in thousands).
    cpu_ready: float = math.nan
    cpu_after_ready: float = math.nan
    #: CPU seconds per second of the scheduler's tree over ``args.idle`` seconds after its last bind,
    #: nothing arriving (NaN: not measured).
    cpu_idle: float = math.nan
    #: The idle window's seconds (0: none).
    idle_seconds: float = 0.0
    #: Each thread's CPU seconds (native id -> seconds) of the scheduler's main process: at ready, at
    #: the last bind, at the idle window's end.
    threads: tuple[dict[int, float], dict[int, float], dict[int, float]] = ({}, {}, {})
    #: Native thread id -> its Python name, as the run's profiles (``--py-spy``) named them.
    thread_names: dict[int, str] = field(default_factory=dict)


def _say(msg: str) -> None:
    print(f"  {time.strftime('%H:%M:%S')} {msg}", flush=True)


#: The Queue object ``args.queue`` makes: the one the bench's pods go to (they name none: ``default``).
PODS_QUEUE = {
    "apiVersion": "scheduling.volsched.io/v1beta1",
    "kind": "Queue",
    "metadata": {"name": "default"},
    "spec": {"weight": 1},
}


def run_one(scheduler: str, mode: str, args: argparse.Namespace, workdir: Path) -> Result:
    tag = f"{scheduler}-{mode}"
    rundir = workdir / tag
    rundir.mkdir(parents=True, exist_ok=True)
    with LocalControlPlane(base_dir=rundir, keep_dir=args.keep_logs is not None) as cp:
        from kubernetes import client

        conn = Conn(cp.host, str(cp.ca_cert_path), cp.admin_token)
        with cp.api_client() as api:
            core: Any = client.CoreV1Api(api)  # (given dicts: the client serialises them)
            prepare_cluster(api)
            t = time.monotonic()
            per_node = math.ceil(args.pods / args.nodes)
            nodes = [node_body(f"node-{i:05d}", per_node) for i in range(args.nodes)]
            create(conn, "node", nodes, args=args, workdir=rundir)
            _say(f"{tag}: {args.nodes} nodes created in {time.monotonic() - t:.1f}s")
            if getattr(args, "queue", False):  # the pods' queue as an object: its status is written
                client.CustomObjectsApi(api).create_cluster_custom_object(
                    "scheduling.volsched.io", "v1beta1", "queues", PODS_QUEUE
                )
            for i in range(getattr(args, "stuck", 0)):  # pods that never fit, there before the scheduler
                body = pod_body(f"stuck-{i:03d}", SCHEDULER_NAMES[scheduler])
                body["spec"]["nodeSelector"] = {"bench.volsched.io/nowhere": "true"}
                core.create_namespaced_pod(NAMESPACE, body)
            there = core.list_namespaced_pod(NAMESPACE)  # the pods that never fit, if any
            rv = there.metadata.resource_version
        before = frozenset(p.metadata.name for p in there.items)
        watch = start_watch(conn, rv, rundir, args.loadgen, before=before)
        bodies = [pod_body(f"pod-{i:06d}", SCHEDULER_NAMES[scheduler]) for i in range(args.pods)]
        creation: Creation | None = None
        if mode == "backlog":
            t = time.monotonic()
            create(conn, "pod", bodies, args=args, workdir=rundir)
            last, since = -1, time.monotonic()
            while (seen := watch.counts()[0]) < args.pods:  # until the watch has seen them all
                if seen != last:
                    last, since = seen, time.monotonic()
                elif time.monotonic() - since > args.stall:
                    raise RuntimeError(f"the watch saw {seen} of {args.pods} pods created")
                time.sleep(0.05)
            _say(f"{tag}: {args.pods} pods created in {time.monotonic() - t:.1f}s")
        log = rundir / f"{scheduler}.log"
        env = volsched_env(args.source) if scheduler == "volsched" else None  # compiled before the clock
        start = time.time()
        if scheduler == "volsched":
            sched = start_volsched(cp, log, args.source, args.volsched_args.split(), env=env)
        elif scheduler == "kube-scheduler":
            sched = start_kube_scheduler(cp, log, rundir)
        else:
            sched = start_ceiling(cp, log, rundir, args=args, python=scheduler == "ceiling-python")
        usage = TreeUsage(sched.proc.pid)
        ready_at = math.nan
        cpu_ready = cpu_done = cpu_idle = math.nan
        idle_seconds = 0.0
        threads: tuple[dict[int, float], dict[int, float], dict[int, float]] = ({}, {}, {})
        names: dict[int, str] = {}
        spy: tuple[subprocess.Popen[bytes], Path] | None = None
        try:
            stalled = False
            last_count, last_change, next_sample, next_say = 0, time.time(), 0.0, time.time() + 10
            while True:
                now = time.time()
                if sched.proc.poll() is not None:
                    raise RuntimeError(f"{scheduler} exited with {sched.proc.returncode}; log: {log}")
                if math.isnan(ready_at) and sched.ready():
                    ready_at = time.time()
                    usage.sample()
                    cpu_ready = usage.cpu_seconds
                    threads[0].update(thread_cpu(sched.proc.pid))
                    if scheduler == "volsched" and getattr(args, "py_spy", None) is not None:
                        spy = start_py_spy(
                            args.py_spy,
                            sched.proc.pid,
                            args.py_spy_out or rundir,
                            gil=getattr(args, "py_spy_gil", False),
                            rate=getattr(args, "py_spy_rate", 200),
                        )
                    if mode == "arriving":
                        creation = start_creation(
                            conn,
                            "pod",
                            bodies,
                            args=args,
                            workdir=rundir,
                            t0=time.time() + 0.2,
                            rate=args.rate,
                        )
                created, count = watch.counts()
                if now >= next_sample:
                    usage.sample()
                    next_sample = now + 0.5
                if count >= args.pods:
                    usage.sample()
                    break
                if count != last_count:
                    last_count, last_change = count, now
                elif now - last_change > args.stall and (mode == "backlog" or not math.isnan(ready_at)):
                    stalled = True
                    usage.sample()
                    break
                if now >= next_say:
                    _say(f"{tag}: {count}/{args.pods} bound, {created} created")
                    next_say = now + 10
                time.sleep(0.02)
            cpu_done = usage.cpu_seconds
            threads[1].update(thread_cpu(sched.proc.pid))
            if getattr(args, "idle", 0) > 0 and not stalled:  # nothing arriving: what waiting costs
                if spy is not None:  # the idle window in a profile of its own
                    stop_py_spy(spy, names)
                    where = args.py_spy_out or rundir
                    spy = start_py_spy(
                        args.py_spy,
                        sched.proc.pid,
                        where,
                        name=f"volsched-{sched.proc.pid}-idle.pyspy.txt",
                        gil=getattr(args, "py_spy_gil", False),
                    )
                usage.sample()
                idle_from, t0 = usage.cpu_seconds, time.monotonic()
                idle_threads = thread_cpu(sched.proc.pid)
                time.sleep(args.idle)
                usage.sample()
                idle_seconds = time.monotonic() - t0
                cpu_idle = (usage.cpu_seconds - idle_from) / idle_seconds
                threads[2].update(  # the idle window's own (not from ready)
                    {t: s - idle_threads.get(t, 0.0) for t, s in thread_cpu(sched.proc.pid).items()}
                )
        finally:
            if spy is not None:
                stop_py_spy(spy, names)
            kill_tree(sched.proc)
            if creation is not None:
                creation.kill()
        added, bound = watch.result()
        try:
            api_binds = apiserver_binds(cp)
        except Exception as exc:  # a figure less, not a run lost
            _say(f"{tag}: the apiserver's metrics could not be read: {exc}")
            api_binds = (0, 0.0)
        binds = {name: t for name, (t, _node) in bound.items()}
        figures = run_figures(
            pods=args.pods, start=start, binds=binds, origins=added if mode == "arriving" else None
        )
        return Result(
            scheduler=scheduler,
            mode=mode,
            figures=figures,
            ready=ready_at - start,
            cpu_per_1000=usage.cpu_seconds / (max(figures.bound, 1) / 1000),
            peak_rss=usage.peak_rss,
            stalled=stalled,
            arrived=_rate(added.values()) if mode == "arriving" else math.nan,
            load=os.getloadavg()[0],
            failed_creates=creation.failed if creation is not None else 0,
            added=added,
            binds=binds,
            log=log,
            api_binds=api_binds,
            cpu_ready=cpu_ready,
            cpu_after_ready=cpu_done - cpu_ready,
            cpu_idle=cpu_idle,
            threads=threads,
            thread_names=names,
            idle_seconds=idle_seconds,
        )


def start_py_spy(
    py_spy: Path, pid: int, where: Path, *, rate: int = 200, name: str | None = None, gil: bool = False
) -> tuple[subprocess.Popen[bytes], Path]:
    """``py-spy record`` on ``pid`` at ``rate`` samples a second (collapsed stacks with their threads,
    ``bench/stacks_top.py`` reads them) into ``name`` (else a new file) in ``where``, its own log beside
    it, from now to :func:`stop_py_spy`; returns once it samples."""
    where.mkdir(parents=True, exist_ok=True)
    out = where / (name or f"volsched-{pid}.pyspy.txt")
    said = out.with_suffix(".log")
    argv = [str(py_spy), "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw", "--threads"]
    if gil:  # only the thread holding the GIL: where Python's CPU goes, not who waits for what
        argv.append("--gil")
    with said.open("w") as log:
        proc = subprocess.Popen([*argv, "--nonblocking", "-o", str(out)], stdout=log, stderr=log)
    while "Sampling" not in said.read_text() and proc.poll() is None:  # attached
        time.sleep(0.05)
    return proc, out


def stop_py_spy(spy: tuple[subprocess.Popen[bytes], Path], names: dict[int, str] | None = None) -> None:
    """Stop it; into ``names`` each native thread id -> its name, as the profile has them."""
    proc, out = spy
    proc.send_signal(signal.SIGINT)
    proc.wait(60)
    _say(f"py-spy: {out}")
    if names is not None and out.exists():
        for m in re.finditer(r"^thread \((?:0x)?(\d+)\): ?([^;]*);", out.read_text(), re.MULTILINE):
            names[int(m.group(1))] = m.group(2)


def apiserver_binds(cp: LocalControlPlane) -> tuple[int, float]:
    """The binds the apiserver has served so far and its seconds on them, summed (its
    ``apiserver_request_duration_seconds`` of POST pods/binding, every client)."""
    ctx = ssl.create_default_context(cafile=str(cp.ca_cert_path))
    req = urllib.request.Request(f"{cp.host}/metrics", headers={"Authorization": f"Bearer {cp.admin_token}"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
        text = resp.read().decode()
    count, seconds = 0, 0.0
    for line in text.splitlines():
        if not line.startswith(
            ("apiserver_request_duration_seconds_sum{", "apiserver_request_duration_seconds_count{")
        ):
            continue
        if 'verb="POST"' not in line or 'resource="pods"' not in line or 'subresource="binding"' not in line:
            continue
        value = float(line.rsplit(" ", 1)[1])
        if line.startswith("apiserver_request_duration_seconds_sum"):
            seconds += value
        else:
            count += int(value)
    return count, seconds


def _rate(times: Iterable[float]) -> float:
    ordered = sorted(times)
    return (
        len(ordered) / (ordered[-1] - ordered[0])
        if len(ordered) > 1 and ordered[-1] > ordered[0]
        else math.nan
    )


# --------------------------------------------------------------------------- report


def report(results: list[Result], *, rate: float) -> None:
    header = (
        f"{'mode':<9} {'scheduler':<15} {'bound':>12} {'pods/s':>8} {'vs kube':>8} {'vs ceil':>8} "
        f"{'1st bind':>9} {'ready':>7} {'1st-rdy':>8} {'p50':>7} {'p99':>7} {'cpu/1k':>7} {'peak RSS':>9} {'load':>5}"
    )
    print(header)
    for mode in MODES:
        rows = [r for r in results if r.mode == mode]
        ref = {r.scheduler: r.figures.throughput for r in rows}
        ref.setdefault("ceiling", ref.get("ceiling-python", math.nan))
        for r in rows:
            f = r.figures
            first, ready, after_ready, p50, p99 = fmt_seconds(
                [f.first_bind, r.ready, f.first_bind - r.ready, f.p50, f.p99]
            )
            bound = f"{f.bound}/{f.pods}" + ("!" if r.stalled else "")
            print(
                f"{mode:<9} {r.scheduler:<15} {bound:>12} {f.throughput:>8.0f} "
                f"{ratio(f.throughput, ref.get('kube-scheduler')):>8} {ratio(f.throughput, ref.get('ceiling')):>8} "
                f"{first:>9} {ready:>7} {after_ready:>8} {p50:>7} {p99:>7} {r.cpu_per_1000:>7.2f} "
                f"{r.peak_rss / 2**20:>7.0f}Mi {r.load:>5.1f}"
            )
            if r.failed_creates:
                print(f"  ({r.failed_creates} pods could not be created)")
        arrived = [f"{r.scheduler} {r.arrived:.0f}/s" for r in rows if not math.isnan(r.arrived)]
        if arrived:
            print(f"  arrived (pods seen created per second): {', '.join(arrived)}")
            if any(r.arrived < 0.9 * rate for r in rows if not math.isnan(r.arrived)):
                print(
                    f"  the pods arrived slower than --rate {rate:.0f}: the apiserver could not create them "
                    "faster here, and the schedulers met different rates; a lower --rate evens them"
                )
    if any(r.stalled for r in results):
        print("!: stalled (no bind for --stall seconds); the figures are of what was bound")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--quick", action="store_true", help="200 nodes x 2,000 pods")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated: backlog, arriving")
    p.add_argument(
        "--only",
        default=",".join(DEFAULT_ONLY),
        help=f"comma-separated, of {', '.join(SCHEDULERS)} (default: {','.join(DEFAULT_ONLY)}); ceiling is "
        "the Go binder (the Python one without Go), ceiling-python the Python one",
    )
    p.add_argument("--rate", type=float, default=500.0, help="arriving mode: pods created per second")
    p.add_argument("--stall", type=float, default=120.0, help="give up after this long without a bind (s)")
    p.add_argument("--create-procs", type=int, default=2, help="processes creating nodes and pods")
    p.add_argument("--create-conns", type=int, default=32, help="connections per creating process")
    p.add_argument("--binder-procs", type=int, default=2, help="processes of the bare binder")
    p.add_argument("--binder-conns", type=int, default=64, help="connections per bare-binder process")
    p.add_argument(
        "--creator", choices=("go", "python"), help="who creates the objects (default: go, if any)"
    )
    p.add_argument(
        "--source",
        type=Path,
        default=ROOT,
        help="run volsched from this checkout (e.g. a worktree of an older commit; default: this one)",
    )
    p.add_argument(
        "--volsched-args",
        default="",
        help="extra options for volsched run, space-separated (e.g. '--bind-workers 32'); default: none",
    )
    p.add_argument(
        "--keep-logs",
        help="keep the schedulers' and control planes' logs in a new subdirectory of this directory",
    )
    args = p.parse_args(argv)
    args.loadgen = build_loadgen()
    if args.loadgen is None and args.creator == "go":
        p.error("no Go toolchain to build bench/loadgen with")
    binder = "go" if args.loadgen else "python"
    args.creator = args.creator or ("go" if args.loadgen else "python")
    args.source = args.source.resolve()
    if not (args.source / "volsched" / "__init__.py").is_file():
        p.error(f"--source {args.source}: no volsched package there")
    if args.quick:
        args.nodes, args.pods = 200, 2000
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    for value, known, what in ((modes, MODES, "--modes"), (only, SCHEDULERS, "--only")):
        bad = sorted(set(value) - set(known))
        if bad:
            p.error(f"{what}: unknown {', '.join(bad)} (known: {', '.join(known)})")
    order = [s for s in SCHEDULERS if s in only]
    exit_on_sigterm()
    print("machine:", describe())
    print(
        f"volsched from {args.source} at {_commit(args.source)}"
        + (f", run with {args.volsched_args}" if args.volsched_args else "")
    )
    print(
        f"{args.nodes} nodes x {args.pods} pods; modes {', '.join(modes)}; arriving rate {args.rate:.0f}/s; "
        f"a fresh control plane per run; ceiling: the {binder} binder; watch: {binder}; objects created by {args.creator}"
    )
    results: list[Result] = []
    failures: list[str] = []
    try:
        with _workdir(args.keep_logs) as workdir:
            for mode in modes:
                for scheduler in order:
                    try:
                        results.append(run_one(scheduler, mode, args, workdir))
                    except Exception as exc:  # the others still run; the report says which failed
                        _say(f"{scheduler}-{mode} FAILED: {exc}")
                        failures.append(f"{scheduler}-{mode}: {exc}")
                        continue
                    f = results[-1].figures
                    _say(f"{scheduler}-{mode}: {f.bound} bound, {f.throughput:.0f} pods/s")
    finally:
        kill_all()
        if results:
            print()
            report(results, rate=args.rate)  # what was measured, also after an interruption
        for failure in failures:
            print("FAILED", failure)
    return 0 if not failures and all(not r.stalled for r in results) else 1


def _commit(checkout: Path) -> str:
    """``<short hash>`` of the checkout's HEAD, ``+dirty`` when volsched/ differs from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "volsched"], cwd=checkout).returncode
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    return head + ("+dirty" if dirty else "")


@contextlib.contextmanager
def _workdir(keep: str | None) -> Iterator[Path]:
    """Where a run's files go. With ``keep``: a fresh subdirectory of it (``run-<date>-<time>-<random>``),
    kept; never a directory an earlier run wrote to, whose pods.jsonl, watch.txt and logs would be read
    back as this run's. Else a temporary directory, removed at the end."""
    if keep:
        parent = Path(keep).resolve()
        parent.mkdir(parents=True, exist_ok=True)
        path = Path(tempfile.mkdtemp(prefix=time.strftime("run-%Y%m%d-%H%M%S-"), dir=parent))
        print(f"logs kept in {path}", flush=True)
        yield path
    else:
        with tempfile.TemporaryDirectory(prefix="volsched-bench-bind-") as tmp:
            yield Path(tmp)


if __name__ == "__main__":
    sys.exit(main())
