"""The apiserver's CPU per bind: a Binding sent as JSON (volsched's) against the same Binding as
Kubernetes' protobuf (kube-scheduler's client sends protobuf).

Starts a local control plane (etcd + kube-apiserver from hack/controlplane), creates the pods, then binds
them in batches of ``--batch`` over ``--conns`` kept-alive connections, the two encodings in the order
J P P J repeated (so neither always meets the earlier or the later minutes), and prints the apiserver's
CPU (its ``/proc`` utime + stime, 10 ms ticks) per bind of each batch, the medians, the wall time, and
the machine. The question it answers: whether the apiserver's JSON decoding of a bind's body (which a
CPU profile of a bench_perf window shows) is worth a protobuf body. Nothing in volsched is used: the
protobuf body is written here by hand (the ``k8s\\0`` magic, a ``runtime.Unknown`` envelope, the
Binding's ObjectMeta and ObjectReference fields by number). ``--kinds json,record`` compares instead the
JSON Binding without and with the bound-under record a pod standing alone is bound with (the annotation
the apiserver copies onto the pod).

    .venv/bin/python bench/bind_body_cpu.py [--kinds json,protobuf] [--batch 250] [--rounds 2] [--conns 8]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import ssl
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from machine import describe

from volsched.model.admitted import BOUND_UNDER, STANDING_ALONE
from volsched_dev.devcluster import LocalControlPlane

NS = "bench"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, data: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _text(number: int, text: str) -> bytes:
    return _field(number, text.encode())


def protobuf_binding(namespace: str, name: str, uid: str, node: str) -> bytes:
    """A v1 Binding as the apiserver's protobuf serializer reads it: ObjectMeta name (1), namespace (3),
    uid (5); ObjectReference kind (1), name (3), apiVersion (5); in runtime.Unknown's typeMeta (1) and
    raw (2), after the magic ``k8s\\0``."""
    meta = _text(1, name) + _text(3, namespace) + (_text(5, uid) if uid else b"")
    target = _text(1, "Node") + _text(3, node) + _text(5, "v1")
    raw = _field(1, meta) + _field(2, target)
    return b"k8s\x00" + _field(1, _text(1, "v1") + _text(2, "Binding")) + _field(2, raw)


def json_binding(namespace: str, name: str, uid: str, node: str, *, record: bool = False) -> bytes:
    """The same Binding as volsched's writer sends it; ``record``: with the bound-under annotation of a
    pod standing alone, which the apiserver copies onto the pod as it binds it."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid}
    if record:
        meta["annotations"] = {BOUND_UNDER: STANDING_ALONE}
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    return json.dumps(body, separators=(",", ":")).encode()


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Api:
    def __init__(self, cp: LocalControlPlane) -> None:
        host, port = cp.host.split("//")[1].rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.context = ssl.create_default_context(cafile=str(cp.ca_cert_path))
        self.headers = {"Authorization": f"Bearer {cp.admin_token}", "Accept": "application/json"}

    def connect(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.context)

    def call(
        self, conn: http.client.HTTPSConnection, method: str, path: str, body: bytes | None, kind: str
    ) -> Any:
        conn.request(method, path, body=body, headers={**self.headers, "Content-Type": kind})
        resp = conn.getresponse()
        data = resp.read()
        if resp.status >= 300:
            raise RuntimeError(f"{method} {path}: {resp.status} {data[:300]!r}")
        return json.loads(data)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=250, help="binds per batch")
    p.add_argument("--rounds", type=int, default=2, help="rounds of J P P J")
    p.add_argument("--conns", type=int, default=8, help="binds in flight (one connection each)")
    p.add_argument(
        "--kinds",
        default="json,protobuf",
        help="the two bodies compared, A B B A: json, protobuf, record (JSON with the bound-under record "
        "of a pod standing alone)",
    )
    args = p.parse_args(argv)
    print("machine:", describe())
    first, second = args.kinds.split(",")
    order = [first, second, second, first] * args.rounds
    encode: dict[str, tuple[Callable[[str, str, str, str], bytes], str]] = {
        "json": (json_binding, "application/json"),
        "protobuf": (protobuf_binding, PROTOBUF),
        "record": (partial(json_binding, record=True), "application/json"),
    }
    with tempfile.TemporaryDirectory() as tmp, LocalControlPlane(base_dir=Path(tmp)) as cp:
        api, apiserver = Api(cp), cp.processes()["kube-apiserver"]
        conn = api.connect()
        plain = "application/json"
        api.call(conn, "POST", "/api/v1/namespaces", json.dumps({"metadata": {"name": NS}}).encode(), plain)
        node = {"metadata": {"name": "node-1"}, "status": {"allocatable": {"cpu": "1000", "pods": "100000"}}}
        api.call(conn, "POST", "/api/v1/nodes", json.dumps(node).encode(), plain)
        uids: dict[str, str] = {}
        for i in range(args.batch * len(order)):
            pod = {
                "metadata": {"name": f"p-{i:06d}"},
                "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "x"}]},
            }
            made = api.call(conn, "POST", f"/api/v1/namespaces/{NS}/pods", json.dumps(pod).encode(), plain)
            uids[made["metadata"]["name"]] = made["metadata"]["uid"]
        names = sorted(uids)
        per: dict[str, list[float]] = {first: [], second: []}
        for i, kind in enumerate(order):
            batch = names[i * args.batch : (i + 1) * args.batch]
            make, content_type = encode[kind]
            conns = [api.connect() for _ in range(args.conns)]
            for c in conns:  # each connection made (its handshake) before the batch is timed
                api.call(c, "GET", "/version", None, plain)

            def bind(c: http.client.HTTPSConnection, mine: list[str]) -> None:
                for name in mine:
                    path = f"/api/v1/namespaces/{NS}/pods/{name}/binding"
                    api.call(c, "POST", path, make(NS, name, uids[name], "node-1"), content_type)  # noqa: B023

            time.sleep(1.0)  # what the pods' creation left the apiserver to do, done
            cpu, wall = _cpu(apiserver), time.monotonic()
            threads = [
                threading.Thread(target=bind, args=(c, batch[k :: args.conns])) for k, c in enumerate(conns)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            ms = 1000 * (_cpu(apiserver) - cpu) / len(batch)
            per[kind].append(ms)
            print(f"{kind:<9} {ms:6.2f} ms of the apiserver's CPU a bind, {time.monotonic() - wall:5.2f} s")
        bound = api.call(conn, "GET", f"/api/v1/namespaces/{NS}/pods/{names[args.batch]}", None, plain)
        assert bound["spec"].get("nodeName") == "node-1", "a protobuf Binding did not bind its pod"
    for kind, values in per.items():
        print(f"{kind:<9} median {statistics.median(values):.2f} ms ({min(values):.2f}-{max(values):.2f})")
    print(f"load after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
