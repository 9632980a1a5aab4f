"""Helpers for the metrics tests: known node_exporter data, real-server processes, and small
loopback HTTP servers (a custom-metrics API stand-in and a fault injector).

Test support only; nothing here is imported by volsched itself.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
HACK = REPO / "hack" / "metrics"

GIB = 1024**3


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A port that refuses connections while the block runs: bound here, never listened on (a port
    merely found free could be taken by another process meanwhile)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def count_connects(monkeypatch: Any) -> list[tuple[str, float | None]]:
    """Every connection urllib3 opens from now on (host, timeout), in a list the caller reads."""
    import urllib3.util.connection as conn

    seen: list[tuple[str, float | None]] = []
    real = conn.create_connection

    def counted(address: tuple[str, int], timeout: Any = None, *args: Any, **kwargs: Any) -> Any:
        seen.append((address[0], timeout))
        return real(address, timeout, *args, **kwargs)

    monkeypatch.setattr(conn, "create_connection", counted)
    return seen


def http_ok(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return bool(200 <= resp.status < 300)
    except (urllib.error.URLError, OSError):
        return False


@dataclass
class Proc:
    """A server process this test session started (and only ever stops by its own PID)."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    url: str
    started_in: float = 0.0

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 20.0) -> None:
        if self.popen.poll() is not None:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(10)


def start_process(
    name: str, argv: list[str], log_path: Path, url: str, ready: Callable[[], bool], timeout: float
) -> Proc:
    """Start ``argv``, wait until ``ready()``; raise RuntimeError (with the log) if it never is."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(log_path, "wb") as log:
        popen = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    proc = Proc(name, popen, log_path, url)
    deadline = started + timeout
    while time.monotonic() < deadline:
        if popen.poll() is not None:
            raise RuntimeError(f"{name} exited with {popen.returncode}:\n{proc.log_tail()}")
        if ready():
            proc.started_in = time.monotonic() - started
            return proc
        time.sleep(0.2)
    proc.stop()
    raise RuntimeError(f"{name} not ready after {timeout:.0f}s:\n{proc.log_tail()}")


@dataclass
class PromServer:
    url: str
    t0: float  # time of the newest backfilled sample: tests query "as of" this instant
    blocks: Path  # pristine backfilled blocks, to start more instances from
    proc: Proc


@dataclass
class EsServer:
    url: str
    proc: Proc


# ---------------------------------------------------------------------------------------------
# Prometheus: known node_exporter series, backfilled with promtool
# ---------------------------------------------------------------------------------------------

SCRAPE = 15  # seconds between samples
HISTORY = 30 * 60  # seconds of history written
SWING_HALF = 150  # the swinging node alternates every 150 s


@dataclass
class PromNode:
    instance: str
    node_label: str | None
    cpus: int
    idle_fraction: Callable[[float], float]  # per-CPU idle share at time t
    mem_total: Callable[[float], float] | None
    mem_available: Callable[[float], float] | None
    extra: dict[str, str] = field(default_factory=dict)


def _square(t: float, high: float, low: float) -> float:
    return high if int(t // SWING_HALF) % 2 == 0 else low


def demo_nodes() -> dict[str, PromNode]:
    """Five node_exporters with known behaviour. Keys are the Kubernetes node names."""
    return {
        # steady: 40 % CPU, 25 % memory; no `node` label, matched by InternalIP from `instance`
        "node-a": PromNode("10.0.0.1:9100", None, 2, lambda t: 0.6, lambda t: 16 * GIB, lambda t: 12 * GIB),
        # swinging: CPU 80 % / 20 %, memory 75 % / 25 %, mean 50 % each; matched by `node` label
        "node-b": PromNode(
            "10.0.0.2:9100",
            "node-b",
            4,
            lambda t: _square(t, 0.2, 0.8),
            lambda t: 8 * GIB,
            lambda t: _square(t, 2 * GIB, 6 * GIB),
        ),
        # CPU only: its memory series are missing -> node must be absent from the result
        "node-c": PromNode("node-c:9100", None, 1, lambda t: 0.5, None, None),
        # garbage memory (available > total -> negative usage) -> dropped, others unaffected
        "node-d": PromNode("10.0.0.4:9100", None, 1, lambda t: 0.9, lambda t: 1 * GIB, lambda t: 3 * GIB),
        # steady 90 % CPU / 50 % memory, matched by hostname in `instance`
        "node-e": PromNode(
            "worker-e.example:9100", None, 2, lambda t: 0.1, lambda t: 4 * GIB, lambda t: 2 * GIB
        ),
    }


def node_addresses() -> dict[str, set[str]]:
    """What the scheduler knows of each node (InternalIP / hostname), as passed to ``fetch``."""
    return {
        "node-a": {"10.0.0.1"},
        "node-b": {"10.0.0.2"},
        "node-c": set(),
        "node-d": {"10.0.0.4"},
        "node-e": {"10.0.0.5", "worker-e.example"},
        "node-x": {"10.0.0.99"},  # known to the scheduler, absent from Prometheus
    }


def _labels(pairs: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(pairs.items())) + "}"


def write_openmetrics(path: Path, end: float) -> None:
    """Samples every SCRAPE s over HISTORY s ending at ``end`` for :func:`demo_nodes`."""
    start = end - HISTORY
    steps = int(HISTORY // SCRAPE)
    times = [start + i * SCRAPE for i in range(steps + 1)]
    lines: list[str] = ["# TYPE node_cpu_seconds counter"]
    for name, node in demo_nodes().items():
        base = {"instance": node.instance, "job": "node"}
        if node.node_label:
            base["node"] = node.node_label
        for cpu in range(node.cpus):
            for mode in ("idle", "user"):
                labels = _labels({**base, "cpu": str(cpu), "mode": mode})
                counter = 1000.0
                prev = times[0]
                for t in times:
                    idle = node.idle_fraction(prev)
                    share = idle if mode == "idle" else 1.0 - idle
                    counter += share * (t - prev)
                    prev = t
                    lines.append(f"node_cpu_seconds_total{labels} {counter:.6f} {t:.3f}")
        del name
    for metric, attr in (
        ("node_memory_MemTotal_bytes", "mem_total"),
        ("node_memory_MemAvailable_bytes", "mem_available"),
    ):
        lines.append(f"# TYPE {metric} gauge")
        for node in demo_nodes().values():
            fn = getattr(node, attr)
            if fn is None:
                continue
            base = {"instance": node.instance, "job": "node"}
            if node.node_label:
                base["node"] = node.node_label
            labels = _labels(base)
            for t in times:
                lines.append(f"{metric}{labels} {fn(t):.1f} {t:.3f}")
    lines.append("# EOF")
    path.write_text("\n".join(lines) + "\n")


def backfill(openmetrics: Path, data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(openmetrics), str(data_dir)],
        check=True,
        capture_output=True,
        timeout=120,
    )


def start_prometheus(data_dir: Path, log_path: Path, timeout: float = 60.0) -> Proc:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    return start_process(
        "prometheus",
        ["bash", str(HACK / "start-prometheus.sh"), str(port), str(data_dir)],
        log_path,
        url,
        lambda: http_ok(url + "/-/ready"),
        timeout,
    )


def copy_blocks(src: Path, dst: Path) -> None:
    """Copy only the TSDB blocks (not the WAL/lock of a running server) into a fresh data dir."""
    dst.mkdir(parents=True, exist_ok=True)
    for child in src.iterdir():
        if child.is_dir() and (child / "meta.json").exists():
            shutil.copytree(child, dst / child.name)


# ---------------------------------------------------------------------------------------------
# Elasticsearch
# ---------------------------------------------------------------------------------------------


def es_ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(
            url + "/_cluster/health?wait_for_status=yellow&timeout=1s", timeout=3
        ) as r:
            body = json.loads(r.read())
        return body.get("status") in ("yellow", "green")
    except (urllib.error.URLError, OSError, ValueError):
        return False


def start_elasticsearch(data_dir: Path, log_path: Path, timeout: float = 600.0) -> Proc:
    port = free_port()
    transport = free_port()
    url = f"http://127.0.0.1:{port}"
    return start_process(
        "elasticsearch",
        ["bash", str(HACK / "start-es.sh"), str(port), str(data_dir), str(transport)],
        log_path,
        url,
        lambda: es_ready(url),
        timeout,
    )


# ---------------------------------------------------------------------------------------------
# Loopback HTTP servers of our own
# ---------------------------------------------------------------------------------------------


Handler = Callable[[str], tuple[int, bytes, float]]  # path -> (status, body, delay seconds)


@dataclass
class SeenRequest:
    path: str
    headers: dict[str, str]


class _RequestHandler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self.server.requests.append(SeenRequest(self.path, {k.lower(): v for k, v in self.headers.items()}))
        status, body, delay = self.server.handler(self.path)
        if delay:
            time.sleep(delay)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    handler: Handler
    requests: list[SeenRequest]
    url: str


@contextlib.contextmanager
def http_server(handler: Handler) -> Iterator[_Server]:
    """A threaded HTTP server on 127.0.0.1 answering GETs with ``handler``; ``.url`` is its base."""
    server = _Server(("127.0.0.1", 0), _RequestHandler)
    server.handler = handler
    server.requests = []
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def prom_matrix(series: list[tuple[dict[str, str], list[Any]]]) -> bytes:
    """A Prometheus ``query_range`` success body."""

    def point(p: Any) -> Any:
        if isinstance(p, tuple) and len(p) == 2:
            ts, v = p
            return [ts, v if isinstance(v, str) else repr(float(v))]
        return p  # deliberately malformed

    result = [{"metric": labels, "values": [point(p) for p in values]} for labels, values in series]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()


def fmt(value: float) -> str:
    return "NaN" if math.isnan(value) else repr(value)


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")
