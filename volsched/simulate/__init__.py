"""The in-memory driver behind ``volsched simulate``: the same engine and cycle on YAML, no cluster.

It reads Nodes, Namespaces, ResourceQuotas, PriorityClasses, Pods, PodGroups, Queues, batch/v1 Jobs,
PersistentVolumeClaims, PersistentVolumes and StorageClasses (the node affinity of the volumes pods
mount; a claim of a WaitForFirstConsumer class is bound as its pod is bound, see ``volumes``), CSINodes and VolumeAttachments
(each node's CSI volume attach limits, and the volumes attached there), CSIDrivers and CSIStorageCapacities (storage capacity, as written:
nothing lowers it as volumes are made),
policy/v1 PodDisruptionBudgets and DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates
(devices claimed through Dynamic Resource Allocation: a bind writes its claims' allocation, and the claims
of templates are made as the resource claim controller makes them; see ``docs/dra.md``), then runs :func:`volsched.cycle.run_cycle` until a cycle changes
nothing or the session limit is reached, with decisions carried out in memory (binds place pods,
evictions a budget allows delete them, and playing the job controller it creates a pending
replacement for an evicted pod of a Job).

* ``documents``: the YAML input and the simulated clock;
* ``loop``: the :class:`Simulator` (loading, the cycles), with ``checks`` (the Jobs' pods, what the
  objects name);
* ``port``: :class:`~volsched.simulate.port.MemoryPort`, the cycle's port in memory (apiserver, kubelet,
  owners' replacements, the Eviction API), with the controllers that write through it: ``jobs`` (the
  job controller), ``budgets`` (the disruption controller and the Eviction API's PodDisruptionBudget
  check), ``claims`` (the resource claim controller) and ``volumes`` (volume binding, the
  PersistentVolume controller and a provisioner);
* ``output``: the ``-o json`` document (around one session's, :mod:`volsched.sessiondoc`, which the
  operator's dashboard serves too);
* ``replay`` and ``timeport``: the time mode (``volsched simulate --replay``): a virtual clock around
  the same cycle, owners that make an evicted pod again; its parts ``feed`` (the input sorted by when
  it comes: arrivals at their creationTimestamp, nodes joining and leaving), ``kubelet`` (pods that run
  for their duration), ``runs`` (each pod's and job's record, what the queues held), ``latencies`` and
  ``annotations`` (what it reads beside the objects), ``report`` (the replay's report);
* the time mode's workloads: ``trace`` (what a trace's record is, its schema and rules), ``tracefiles``
  (CSV, JSON Lines and YAML, read and written), ``traceobjects`` (the PodGroup and pods a job becomes),
  ``generate`` (synthetic traces) and ``scenarios`` (the named ones);
* ``compare`` and ``plots``: several replays side by side, as JSON and as an HTML page.

The parts import in one direction (``pyproject.toml``'s simulator contract places every one).

Bad input raises :class:`InputError` naming the file, the document and the field.
"""

from volsched.simulate.checks import MAX_JOB_PODS, MAX_PARALLELISM
from volsched.simulate.documents import EPOCH, Document, iso, load_documents
from volsched.simulate.loop import (
    SimulationResult,
    Simulator,
    simulate,
    simulate_stages,
)
from volsched.simulate.output import replay_json, to_json
from volsched.simulate.replay import Replay, ReplayResult

__all__ = [
    "EPOCH",
    "MAX_JOB_PODS",
    "MAX_PARALLELISM",
    "Document",
    "Replay",
    "ReplayResult",
    "SimulationResult",
    "Simulator",
    "iso",
    "load_documents",
    "replay_json",
    "simulate",
    "simulate_stages",
    "to_json",
]
