"""The only package that writes to the Kubernetes API.

``writer.KubeWriter`` carries a :class:`~volsched.framework.decisions.SessionResult` out against a
cluster: binds (``pods/binding``), evictions (``pods/eviction``), PodGroup and Queue status, the pod
condition ``PodScheduled=False`` and one deduplicated ``FailedScheduling`` event per pod. ``lease`` keeps
one scheduler active, ``configsource`` reads the scheduler ConfigMap, ``client`` builds API clients.
``ratelimit`` and ``status`` are pure (no I/O) and unit-tested on their own.
"""
