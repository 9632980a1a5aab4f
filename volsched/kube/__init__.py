"""Everything that talks to the Kubernetes API, and the only package that imports its client.

* Reading: ``lister`` (one consistent listing of every kind the cache holds, before the first session),
  ``watch`` (a lean list+watch for Pods and Nodes; ``prune`` keeps of each object only what is read),
  ``configsource`` (the scheduler ConfigMap).
* Writing: ``port.KubePort`` is the cycle's port to a cluster (:class:`volsched.cycle.Port`) over
  ``writer.KubeWriter``, which carries decisions out: binds (``pods/binding``), evictions
  (``pods/eviction``), PodGroup and Queue status, the pod condition ``PodScheduled=False`` and one
  deduplicated ``FailedScheduling`` event per pod; ``podgroups`` creates owners' PodGroups and reports
  Volcano objects ours shadow. ``rest`` sends the writer's hot-path requests as plain JSON on the
  client's connections; ``status`` renders what is written and ``ratelimit`` paces it (both pure, no
  I/O, unit-tested on their own).
* Around them: ``lease`` (one active scheduler; it fences every write), ``health`` (whether the
  apiserver answers, in a few log lines per outage), ``client`` (API clients from a kubeconfig or
  in-cluster; ``kubeconfig`` reads the common forms without importing the client, which only the
  forms it declines and the custom metrics source import), ``errors`` (the error an answer raises),
  ``refused`` (an answer refusing a start's first request as the line the start ends in: pure),
  ``early`` (the Pods' and Nodes' first pages, asked for while the operator's modules import),
  ``tlsahead`` (aiohttp's default TLS contexts, made ahead for its import after ready).

Nothing here decides what to schedule: decisions come from the engine through :mod:`volsched.cycle`.
"""
