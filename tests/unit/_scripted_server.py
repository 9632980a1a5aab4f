"""A loopback HTTP server that answers scripted statuses per path and records what it received: the
apiserver's faults injected (429 with Retry-After, a PodDisruptionBudget's refusal, a 500); and the
kubernetes client's configuration for a loopback server like it."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from kubernetes import client

Answer = tuple[int, dict[str, str], dict[str, Any]]


def loopback_config(
    port: int, *, token: str = "", retries: bool | None = None, pool_size: int | None = None
) -> client.Configuration:
    """The client's configuration for the loopback server on ``port``: ``token`` sent as a bearer
    token; ``retries=False``: urllib3 retries nothing (the test sees every answer); ``pool_size``
    connections kept at most (1: every call reuses one)."""
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    if token:
        cfg.api_key = {"authorization": token}
        cfg.api_key_prefix = {"authorization": "Bearer"}
    cfg.retries = retries
    if pool_size is not None:
        cfg.connection_pool_maxsize = pool_size
    return cfg


OK: Answer = (201, {}, {"kind": "Status", "status": "Success"})

#: The apiserver's answer to a patch that names another uid than the pod's (the pod was made again).
UID_REFUSED: Answer = (
    422,
    {},
    {
        "kind": "Status",
        "reason": "Invalid",
        "code": 422,
        "message": 'Pod "p" is invalid: metadata.uid: Invalid value: "u1": field is immutable',
        "details": {
            "name": "p",
            "kind": "Pod",
            "causes": [{"reason": "FieldValueInvalid", "field": "metadata.uid"}],
        },
    },
)


@dataclass
class Received:
    method: str
    path: str
    body: dict[str, Any]
    authorization: str


class ScriptedServer:
    """Answers each request to a path ending in a key of ``script`` with the next scripted answer
    (the last one repeats); everything else gets 200 {}. A context manager: leaving it stops the server."""

    def __init__(self) -> None:
        self.script: dict[str, list[Answer]] = {}
        self.received: list[Received] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                outer.received.append(
                    Received(self.command, self.path, body, self.headers.get("authorization", ""))
                )
                outer.before_answer(self.path)
                status: int = 200
                headers: dict[str, str] = {}
                payload: dict[str, Any] = {}
                for suffix, answers in outer.script.items():
                    if self.path.endswith(suffix):
                        status, headers, payload = answers.pop(0) if len(answers) > 1 else answers[0]
                data = json.dumps(payload).encode()
                self.send_response(status)
                for k, v in {**headers, "Content-Type": "application/json"}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_PATCH = do_GET = do_PUT = do_DELETE = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def before_answer(self, path: str) -> None:
        """A hook for subclasses (hold a request)."""

    def sent(self, suffix: str) -> list[Received]:
        return [r for r in self.received if r.path.endswith(suffix)]
