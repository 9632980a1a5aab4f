"""The direct path's connections after the first resume its TLS session, on a real kube-apiserver: a burst's
bind workers each open a connection (after the apiserver closed theirs, idle for 90 s), and a full
handshake costs the apiserver a signature with its certificate's key each. A connection that resumed
answers as any (the same credentials go with each request)."""

from __future__ import annotations

import threading

import pytest

from volsched.kube import parked
from volsched.kube import rest as rest_module
from volsched.kube.kubeconfig import Api, ClientConfig, read_kubeconfig
from volsched.kube.rest import LeanRest
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster


def _rest(control_plane: LocalControlPlane) -> LeanRest:
    cfg = read_kubeconfig(str(control_plane.kubeconfig_path))
    assert isinstance(cfg, ClientConfig)
    parked.close_all()  # every connection below is opened, none adopted
    rest_module._SESSIONS.clear()  # and the first makes a full handshake
    return LeanRest(Api(cfg))


def _in_thread(rest: LeanRest, path: str) -> object:
    """``path`` read on a new thread (a connection of its own), its answer."""
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(rest.get(path, timeout=30)))
    thread.start()
    thread.join(60)
    assert out, "the read did not answer"
    return out[0]


def test_the_connections_after_the_first_resume_its_session_and_answer_as_any(
    control_plane: LocalControlPlane,
) -> None:
    rest = _rest(control_plane)
    first = _in_thread(rest, "/version")
    assert (rest.connects, rest.resumed) == (1, 0)
    for _ in range(3):
        assert _in_thread(rest, "/version") == first
    # A request that needs the credentials: answered on a resumed connection as on the first.
    assert _in_thread(rest, "/api/v1/namespaces/default")["metadata"]["name"] == "default"  # type: ignore[index]
    assert (rest.connects, rest.resumed) == (5, 4)
    kept = dict(rest_module._SESSIONS)
    rest.close()
    # Another client with the same settings (the same context) resumes it too.
    other = _rest(control_plane)
    rest_module._SESSIONS.update(kept)
    assert _in_thread(other, "/version") == first
    assert (other.connects, other.resumed) == (1, 1)
    other.close()
