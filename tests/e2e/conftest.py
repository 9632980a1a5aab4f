"""Fixtures for tests against a real etcd + kube-apiserver (see volsched_dev/devcluster.py).

Tests using them are marked ``@pytest.mark.cluster``. The first use builds the binaries
(hack/controlplane/build.sh, several minutes on a cold Go cache; run it before pytest
when a per-test timeout is in force). When they cannot be built or the control plane
does not start, the fixture FAILS (it never skips): a missing control plane is a broken
environment, not an optional feature.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.e2e.controlplanes import running
from volsched_dev.devcluster import TEST_USER, LocalControlPlane


@pytest.fixture(scope="session")
def control_plane() -> Iterator[LocalControlPlane]:
    """One running control plane for the whole session (admin + ``TEST_USER`` tokens)."""
    with running(LocalControlPlane(users={TEST_USER: ()})) as cp:
        yield cp


@pytest.fixture
def kube(control_plane: LocalControlPlane) -> Iterator[client.ApiClient]:
    """An admin (``system:masters``) ApiClient, closed after the test."""
    with control_plane.api_client() as api:
        yield api


@pytest.fixture
def namespace(request: pytest.FixtureRequest, kube: client.ApiClient) -> str:
    """A fresh namespace for the test. Not deleted afterwards: without a namespace
    controller a deleted namespace stays Terminating forever, and the whole control
    plane is thrown away at the end of the session anyway."""
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{base or 't'}-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(kube).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name
