"""The simulator's job controller: the batch/v1 Jobs it runs, and their pods, made one after another
(``<job>-<index>``, owned by the Job) when a Job starts and when one of its pods is evicted.

Not a Job's completion nor its pods' runs: the instant mode has none, the time mode's port
(:mod:`volsched.simulate.timeport`) deletes a Job whose pods all succeeded.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from volsched.model.errors import InputError
from volsched.model.raw import Raw, meta_of

#: The simulator's Jobs without a metadata.uid get one derived from their namespace and name.
_JOB_UIDS = uuid.UUID("6c0f5c1e-8d0a-4a59-9f57-5d2f4b7c9a10")


def job_uid(job: Raw) -> str:
    """The Job's UID, as its pods' owner reference names it (their PodGroup is ``podgroup-<uid>``):
    its own, else one derived from its namespace and name (the same in every run)."""
    meta = meta_of(job)
    uid = meta.get("uid")
    if uid:
        return str(uid)
    return str(uuid.uuid5(_JOB_UIDS, f"{meta.get('namespace') or 'default'}/{meta.get('name')}"))


class JobController:
    """The Jobs it runs and how many pods each has had; ``put`` is the simulated apiserver's."""

    def __init__(self, put: Callable[[Mapping[str, Any]], None]) -> None:
        self._put = put
        #: The Jobs the job controller runs ("ns/name" -> the Job object).
        self.jobs: dict[str, dict[str, Any]] = {}
        self._counter: dict[str, int] = {}

    def start(self, job_key: str, job: dict[str, Any], pods: int) -> None:
        """Run ``job`` and create its first ``pods`` pods."""
        self.jobs[job_key] = job
        self._counter[job_key] = 0
        created = job["metadata"].get("creationTimestamp")
        for _ in range(pods):
            self.spawn(job_key, created)

    def spawn(self, job_key: str, created: Any) -> str:
        """Create the Job's next pod, pending. Returns its key."""
        job = self.jobs[job_key]
        ns, name = job_key.split("/", 1)
        index = self._counter[job_key]
        self._counter[job_key] = index + 1
        template = copy.deepcopy(job["spec"]["template"])
        tmeta = meta_of(template)
        pod_name = f"{name}-{index}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": ns,
                "uid": f"{ns}/{pod_name}",
                "labels": {**(tmeta.get("labels") or {}), "job-name": name},
                "annotations": dict(tmeta.get("annotations") or {}),
                "creationTimestamp": created,
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": name,
                        "uid": job_uid(job),
                        "controller": True,
                    }
                ],
            },
            "spec": template["spec"],
            "status": {"phase": "Pending"},
        }
        try:
            self._put(pod)
        except InputError as exc:
            raise InputError(f"Job {job_key}: spec.template: {exc.message}") from None
        return f"{ns}/{pod_name}"
