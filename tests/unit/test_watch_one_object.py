"""A lean watch of one named object in one namespace (the scheduler ConfigMap's): its listing and its
watch both ask for that namespace's path with the object's field selector (RBAC grants them by the
object's name), and ``answering`` says whether the last attempt was answered (loopback server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.unit._scripted_server import ScriptedServer, loopback_config
from volsched.kube.configsource import CONFIG_MAP, name_selector
from volsched.kube.watch import ApiError, ListWatch

SELECTED = "fieldSelector=metadata.name%3Dmy+cfg"
LISTED = (
    200,
    {},
    {
        "metadata": {"resourceVersion": "7"},
        "items": [{"metadata": {"name": "my cfg", "namespace": "a b", "resourceVersion": "5", "uid": "u"}}],
    },
)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


def test_the_listing_and_the_watch_ask_for_the_one_object_in_its_namespace(server: ScriptedServer) -> None:
    server.script["limit=500"] = [LISTED]
    server.script["resourceVersion=7"] = [(403, {}, {"kind": "Status", "code": 403, "message": "no"})]
    events: list[tuple[str, str]] = []
    with client.ApiClient(loopback_config(server.port, retries=False)) as api:
        w = ListWatch(
            api,
            CONFIG_MAP,
            on_event=lambda t, obj: events.append((t, obj["metadata"]["name"])),
            namespace="a b",
            field_selector=name_selector("my cfg"),
        )
        assert not w.answering
        assert w.relist() == "7"
        assert w.answering and events == [("ADDED", "my cfg")]
        with pytest.raises(ApiError):  # refused (say, RBAC without watch)
            w.watch_once("7")
        w._failed(ApiError(403, "no"))  # as the watch's loop tells of it
        assert not w.answering
    paths = [r.path for r in server.received]
    assert paths[0] == f"/api/v1/namespaces/a%20b/configmaps?{SELECTED}&limit=500"
    assert paths[1].startswith(f"/api/v1/namespaces/a%20b/configmaps?{SELECTED}&watch=true&")
