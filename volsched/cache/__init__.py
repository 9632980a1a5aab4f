"""The cluster as the scheduler believes it: ``state.ClusterState`` (objects from watch events or YAML,
decoded once, snapshots for sessions), ``snapshots`` (those snapshots, built outside the cache's lock
from what changed since the last one) and ``feeder.Feeder`` (the door for watch events: resourceVersion
order, assumed binds until the watch confirms them); ``volcano`` reads Volcano's PodGroups and Queues
with the meaning of ours."""
