"""volsched: a batch scheduler for Kubernetes.

The engine, lowest layer first (each imports only those below it; import-linter contracts in
``make lint`` hold this):

* :mod:`volsched.model` -- the vocabulary: resources, pods, nodes, jobs, queues, snapshots. No I/O.
* :mod:`volsched.framework` -- the session, its extension points and Statement, the registries, the
  config, the runner that opens, runs and closes a session.
* :mod:`volsched.actions` and :mod:`volsched.plugins` -- what a session does and the callbacks it asks;
  neither imports the other.

Around it, the edges: :mod:`volsched.cache` (cluster state from watch events or YAML), :mod:`volsched.kube`
(the only code that talks to the API), :mod:`volsched.metrics` (node usage), ``operator`` and ``simulate``
(the two drivers), ``cli``, ``render`` and ``ui``. The development harness is the separate
``volsched_dev`` package.
"""
