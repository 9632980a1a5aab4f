"""The operator's Queue finalizer is added beside any other's (real apiserver): the session guards a Queue
from its cache's view of it, which may be a moment behind. Where that view had no finalizer, the writer set
the list to its own, and a finalizer another controller had added meanwhile was gone (its cleanup would
never run). It now adds its own to the list as the apiserver holds it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import GROUP, VERSION, Kube, queue
from tests.fences import Fence
from volsched.kube.writer import KubeWriter, WriterSettings
from volsched.model.vocabulary import QUEUE_FINALIZER

pytestmark = pytest.mark.cluster

OTHER = "example.com/cleanup"


@pytest.fixture
def writer(mk: Kube) -> Iterator[KubeWriter]:
    w = KubeWriter(mk.api, WriterSettings(workers=1), fence=Fence())
    yield w
    w.close()


def _finalizers(mk: Kube, name: str) -> list[str]:
    return list(mk.get_queue(name)["metadata"].get("finalizers") or [])


def test_the_queue_finalizer_is_added_beside_another_added_since_the_cache_read_it(
    mk: Kube, writer: KubeWriter
) -> None:
    mk.queue(queue("fresh"))
    mk.custom.patch_cluster_custom_object(
        GROUP, VERSION, "queues", "fresh", {"metadata": {"finalizers": [OTHER]}}
    )
    # The session's view: the Queue as first read, with no finalizer.
    assert writer.guard_queue("fresh", (), keep=True) is None
    assert _finalizers(mk, "fresh") == [OTHER, QUEUE_FINALIZER]
    # A Queue that has none: its list is made; one that has ours already is left as it is.
    mk.queue(queue("bare"))
    assert writer.guard_queue("bare", (), keep=True) is None
    assert _finalizers(mk, "bare") == [QUEUE_FINALIZER]
    assert writer.guard_queue("bare", (), keep=True) is None
    assert _finalizers(mk, "bare") == [QUEUE_FINALIZER]
    # Taken off: only ours, the other's kept.
    assert writer.guard_queue("fresh", (OTHER, QUEUE_FINALIZER), keep=False) is None
    assert _finalizers(mk, "fresh") == [OTHER]
    client.CustomObjectsApi(mk.api).patch_cluster_custom_object(
        GROUP, VERSION, "queues", "fresh", {"metadata": {"finalizers": None}}
    )
