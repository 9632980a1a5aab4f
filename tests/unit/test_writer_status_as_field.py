"""Where the writer puts a Volcano object's status (a loopback server that records the requests): through
the status subresource where the CRD has one; straight into the object where discovery said it has none
(Volcano's PodGroup CRD), with no request to a /status the apiserver does not serve first; and, before
discovery has said, /status first and the object when that answers 404."""

from __future__ import annotations

from tests.unit._scripted_server import ScriptedServer
from volsched.cache.volcano import VOLCANO_GROUP
from volsched.framework.decisions import PodGroupStatus, SessionResult
from volsched.kube.writer import KubeWriter

NOT_FOUND = (404, {}, {"kind": "Status", "reason": "NotFound", "code": 404})
PG = f"/apis/{VOLCANO_GROUP}/v1beta1/namespaces/ns/podgroups/pg"


def _write(writer: KubeWriter, server: ScriptedServer) -> list[str]:
    server.received.clear()
    result = SessionResult()
    result.podgroups["ns/pg"] = PodGroupStatus(
        phase="Running",
        queue="default",
        min_member=1,
        running=1,
        succeeded=0,
        failed=0,
        pending=0,
        scheduled=1,
    )
    writes, _, errors = writer.write_status(result, queues={}, podgroups={"ns/pg": VOLCANO_GROUP}, pods={})
    assert (writes, errors) == (1, [])
    return [f"{r.method} {r.path.split('?')[0]}" for r in server.received]


def test_a_crd_without_a_status_subresource_gets_its_status_in_the_object_at_once(
    writer: KubeWriter, server: ScriptedServer
) -> None:
    server.script[f"{PG}/status"] = [NOT_FOUND]
    writer.status_subresource(VOLCANO_GROUP, "podgroups", served=False)
    assert _write(writer, server) == [f"PATCH {PG}"]


def test_unknown_yet_the_status_subresource_is_tried_first(
    writer: KubeWriter, server: ScriptedServer
) -> None:
    server.script[f"{PG}/status"] = [NOT_FOUND]
    assert _write(writer, server) == [f"PATCH {PG}/status", f"PATCH {PG}"]


def test_a_crd_with_a_status_subresource_gets_it_there(writer: KubeWriter, server: ScriptedServer) -> None:
    writer.status_subresource(VOLCANO_GROUP, "podgroups", served=False)
    writer.status_subresource(VOLCANO_GROUP, "podgroups", served=True)  # the CRD replaced by one with it
    assert _write(writer, server) == [f"PATCH {PG}/status"]
