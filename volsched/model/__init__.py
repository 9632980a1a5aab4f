"""The vocabulary the engine speaks: resource vectors (``resources``), pods, nodes, PodGroups and queues
decoded from plain Kubernetes dicts (``objects``, ``validation``, ``constraints``), the snapshot a session
works on (``cluster``), fair shares (``fairshare``), and small parsers (``scalars``, ``yamlload``).

Pure computation: no I/O, no Kubernetes client, nothing above it imported."""
