"""What the engine speaks about, lowest first (``make lint`` holds the order: the ``model-layers`` contract):

* ``errors`` (:class:`InputError`); ``resources`` (quantities and numpy resource vectors), ``scalars``
  (booleans, durations), ``usage`` (measured node load), ``validation`` (names and labels), ``yamlload``
  (the bounded YAML loader);
* ``vocabulary``: what things are (task status, PodGroup phase, queue state; :class:`Task`,
  :class:`NodeSpec`, :class:`QueueSpec`, :class:`PodGroupSpec`; the API group, scheduler name and
  annotations), with ``constraints`` (pod affinity, anti-affinity and topology spread, per-domain counts);
* ``decode``: raw Kubernetes dicts -> those specs (the only module that reads whole objects; the cache
  and the drivers call it, the engine never does); ``cluster``: the snapshot a session works on;
  ``fairshare``: hierarchical fair shares.

Pure computation: no I/O, no Kubernetes client, nothing above it imported."""
