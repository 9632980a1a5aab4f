"""The in-memory driver behind ``volsched simulate``: the same engine, on Kubernetes YAML, no cluster.

It reads Nodes, Namespaces, ResourceQuotas, PriorityClasses, Pods, PodGroups, Queues, batch/v1 Jobs,
PersistentVolumeClaims and PersistentVolumes (for the node affinity of the volumes pods mount),
then runs sessions and applies their decisions in memory (binds place pods, evictions delete them, and
playing the job controller it creates a pending replacement for an evicted pod of a Job) until a
session changes nothing or the session limit is reached.

Bad input raises :class:`InputError` naming the file, the document and the field.
"""

from volsched.simulate.documents import EPOCH, Document, iso, load_documents
from volsched.simulate.loop import (
    MAX_JOB_PODS,
    MAX_PARALLELISM,
    SimulationResult,
    Simulator,
    simulate,
    simulate_stages,
)
from volsched.simulate.output import session_json, to_json

__all__ = [
    "EPOCH",
    "MAX_JOB_PODS",
    "MAX_PARALLELISM",
    "Document",
    "SimulationResult",
    "Simulator",
    "iso",
    "load_documents",
    "session_json",
    "simulate",
    "simulate_stages",
    "to_json",
]
