"""The descheduler's strategies on the rescheduling plugin's plumbing: which running (or failed) pods to
move, and why.

Each strategy is a *selector*: parsed once from its ``params`` (the descheduler's parameter names) and
asked, once per answer of the rescheduling plugin, for ``(task, reason)`` pairs. A selector sees only
the pods the plugin offers (:class:`Context.candidates`: pods of this scheduler the default evictor does
not protect, inside the plugin's queue/label selectors and ``offlineOnly``), in the plugin's order
(``ctx.key``: the ordering strategies, first evicted first), and asks :meth:`Context.pick` before it
counts a pod as moved (nodeFit and the limits). What it picks the shuffle action evicts,
within its per-session limit and never taking a gang below minMember; the Eviction API enforces
PodDisruptionBudgets, and the evicted pod's owner keeps off the node it left (no move-back).

Placement constraints are read with the same code placement uses (``volsched.model.nodeterms``:
node selector, required node affinity, taints; ``volsched.model.constraints``: the per-topology-domain
counts of inter-pod anti-affinity and topology spread) and "another node could take it" is the
session's own filter mask (``session.feasible_nodes``) with the nodes' free capacity. Node utilization is the usage plugin's
estimate of real usage (``volsched.plugins.shared.usage_estimate``) or the pods' requests.

One module per strategy (both node utilization strategies in one, as they read load alike), none
importing another: what they share is the plugin's (``context.py``: what a strategy sees; ``params.py``:
reading its params). This module holds only the name each is configured by. No I/O happens here.
"""

from __future__ import annotations

from collections.abc import Callable

from volsched.plugins.rescheduling.context import Selector
from volsched.plugins.rescheduling.params import Params
from volsched.plugins.rescheduling.strategies.duplicates import RemoveDuplicates
from volsched.plugins.rescheduling.strategies.failedpods import RemoveFailedPods
from volsched.plugins.rescheduling.strategies.interpodantiaffinity import (
    RemovePodsViolatingInterPodAntiAffinity,
)
from volsched.plugins.rescheduling.strategies.nodeaffinity import RemovePodsViolatingNodeAffinity
from volsched.plugins.rescheduling.strategies.nodetaints import RemovePodsViolatingNodeTaints
from volsched.plugins.rescheduling.strategies.nodeutilization import HighNodeUtilization, LowNodeUtilization
from volsched.plugins.rescheduling.strategies.podlifetime import PodLifeTime
from volsched.plugins.rescheduling.strategies.restarts import RemovePodsHavingTooManyRestarts
from volsched.plugins.rescheduling.strategies.topologyspread import (
    RemovePodsViolatingTopologySpreadConstraint,
)

#: Strategy name -> its parser. The descheduler's spelling (``RemoveDuplicates``) is accepted too.
SELECTORS: dict[str, Callable[[Params], Selector]] = {
    "lowNodeUtilization": LowNodeUtilization.parse,
    "highNodeUtilization": HighNodeUtilization.parse,
    "removeDuplicates": RemoveDuplicates.parse,
    "removePodsViolatingNodeAffinity": RemovePodsViolatingNodeAffinity.parse,
    "removePodsViolatingNodeTaints": RemovePodsViolatingNodeTaints.parse,
    "removePodsViolatingInterPodAntiAffinity": RemovePodsViolatingInterPodAntiAffinity.parse,
    "removePodsViolatingTopologySpreadConstraint": RemovePodsViolatingTopologySpreadConstraint.parse,
    "podLifeTime": PodLifeTime.parse,
    "removePodsHavingTooManyRestarts": RemovePodsHavingTooManyRestarts.parse,
    "removeFailedPods": RemoveFailedPods.parse,
}
