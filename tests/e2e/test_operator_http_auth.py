"""/metrics and the dashboard's data answer only a caller the apiserver vouches for (TokenReview) and
allows (SubjectAccessReview), as kube-rbac-proxy does; the dashboard shows a caller only the namespaces
whose pods it may list; the health endpoints answer anyone; no token reaches the log (real apiserver)."""

from __future__ import annotations

import json
import urllib.error

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import Kube, Start, node, pod, podgroup, queue, wait_for
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster


def _grant(k: Kube, name: str, *, sa: str, rules: list[dict[str, object]], ns: str | None = None) -> None:
    """Role ``name`` with ``rules`` for service account ``team-b/<sa>``: cluster-wide, or in ``ns`` only."""
    rbac = client.RbacAuthorizationV1Api(k.api)
    subject = [{"kind": "ServiceAccount", "name": sa, "namespace": "team-b"}]
    if ns is None:
        rbac.create_cluster_role({"metadata": {"name": name}, "rules": rules})
        rbac.create_cluster_role_binding(
            {
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": subject,
            }
        )
    else:
        rbac.create_namespaced_role(ns, {"metadata": {"name": name}, "rules": rules})
        rbac.create_namespaced_role_binding(
            ns,
            {
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": subject,
            },
        )


UI = {"nonResourceURLs": ["/ui"], "verbs": ["get"]}
METRICS = {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
LIST_PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}


def test_metrics_and_dashboard_data_need_a_token_the_apiserver_allows(
    k: Kube, cluster: LocalControlPlane, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="4"))
    k.queue(queue("default"))
    for ns in ("team-a", "team-b"):
        k.namespace(ns)
        k.podgroup(ns, podgroup("job", 1))
        k.pods(ns, pod("job-0", group="job"), pod("huge", cpu="64"))
    # viewer-b: the dashboard, and pods in team-b only; viewer-all: pods everywhere, and /metrics;
    # nobody: a valid token with no rights.
    tokens = {
        name: cluster.service_account_token("team-b", name) for name in ("viewer-b", "viewer-all", "nobody")
    }
    _grant(k, "viewer-b-ui", sa="viewer-b", rules=[UI])
    _grant(k, "viewer-b", sa="viewer-b", rules=[LIST_PODS], ns="team-b")
    _grant(k, "viewer-all", sa="viewer-all", rules=[UI, METRICS, LIST_PODS])

    op = start_operator("--http-auth", "kubernetes")
    wait_for(lambda: len(k.bound()) == 2, 30, what="both jobs bound")

    # Anyone: the health endpoints and the page (which holds no data).
    assert op.get("/healthz")[0] == 200 and op.get("/readyz")[0] == 200
    status, page = op.get("/ui")
    assert status == 200 and b"state.json" in page
    # No token, a token the apiserver does not take, a token with no rights.
    for path in ("/metrics", "/ui/state.json"):
        assert op.get(path)[0] == 401
        assert op.get(path, "not-a-token")[0] == 401
        assert op.get(path, tokens["nobody"])[0] == 403
    assert op.get("/metrics", tokens["viewer-b"])[0] == 403

    def shown(token: str) -> dict[str, object]:
        status, body = op.get("/ui/state.json", token)
        assert status == 200, body
        return json.loads(body)  # type: ignore[no-any-return]

    wait_for(lambda: shown(tokens["viewer-all"])["podgroups"], 30, what="a session on the dashboard")
    every = shown(tokens["viewer-all"])
    assert {"team-a/job", "team-b/job"} <= set(every["podgroups"])  # type: ignore[arg-type]
    assert any("team-a/huge" in e["object"] for e in every["events"])  # type: ignore[union-attr,index]
    mine = shown(tokens["viewer-b"])
    assert set(mine["podgroups"]) == {"team-b/job"}  # type: ignore[arg-type]
    assert mine["namespacesShown"] == ["team-b"]
    assert mine["events"] and all("team-b/" in e["object"] for e in mine["events"])  # type: ignore[union-attr,index]
    assert set(mine["queues"]) == set(every["queues"])  # type: ignore[arg-type]
    status, text = op.get("/metrics", tokens["viewer-all"])
    assert status == 200 and b"volsched_" in text

    log = op.log()
    assert all(t not in log for t in tokens.values())
    assert "not-a-token" not in log


def test_many_viewers_build_the_dashboard_once_per_session(k: Kube, start_operator: Start) -> None:
    """16 clients polling /ui/state.json while pods arrive and are bound: the document is built at most
    once per session (the sessions, not the viewers, set the work), and every viewer gets an answer.
    Each document says which session it is of (``sessions``): built once per session, there are no more
    builds than documents the viewers were answered with, whatever each was answered with again."""
    import threading
    from collections import Counter

    k.nodes(node("n1", cpu="64"))
    k.queue(queue("default"))
    ns = k.namespace("viewers")
    op = start_operator()
    stop = threading.Event()
    answers: list[int] = []
    documents: list[int] = []  # the session each answer's document is of

    def view() -> None:
        while not stop.is_set():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{op.port}/ui/state.json", timeout=10) as r:
                    documents.append(json.loads(r.read())["sessions"])
                    answers.append(r.status)
            except urllib.error.HTTPError as exc:
                answers.append(exc.code)
            stop.wait(0.25)

    viewers = [threading.Thread(target=view, daemon=True) for _ in range(16)]
    for v in viewers:
        v.start()
    try:
        for i in range(20):
            k.pods(ns, pod(f"p{i}", cpu="100m"))
        wait_for(lambda: len(k.bound(ns)) == 20, 60, what="every pod bound while 16 clients poll")
        # One document answered three times: had each request built it, builds would outnumber documents.
        answered = lambda: max(Counter(documents).values(), default=0)  # noqa: E731
        wait_for(lambda: answered() >= 3, 60, what="one document answered three times")
    finally:
        stop.set()
        for v in viewers:
            v.join(15)
    builds, sessions = op.metric("volsched_dashboard_builds"), op.metric("volsched_sessions_total")
    assert 200 in answers and set(answers) <= {200, 429}
    assert builds <= len(set(documents))  # each document built once, however often it was answered
    assert len(answers) > 2 * builds  # the viewers asked far more often than the document was built
    assert builds <= sessions + 1  # (+1: the empty document served before the first session)
