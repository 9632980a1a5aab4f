"""In-tree volume plugins migrated to CSI, as kube-scheduler 1.37's NodeVolumeLimits counts their volumes:
which volume sources (a PersistentVolume's, or a pod's inline ``spec.volumes[]``) and which StorageClass
provisioners count as which CSI driver's, and under which volume id.

Pure and small (no numpy): the listing's pruning (``volsched.kube.prune``) reads it to keep a pod's
inline volumes of these plugins, and the volume model (``volsched.model.volumes``, ``attach``) to count
them. Design: docs/placement.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The in-tree volume plugins whose volumes kube-scheduler 1.37's NodeVolumeLimits counts as those of the
#: CSI driver they are migrated to (the five whose migration is on for good, Portworx's since 1.33, on
#: every node with a CSINode, where a limit can be; Azure File's, vSphere's and RBD's are not counted):
#: volume source (of a PersistentVolume or inline in a pod) -> (the plugin's name, the driver's, the field
#: naming the volume).
IN_TREE_MIGRATED = {
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com", "volumeID"),
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "pdName"),
    "azureDisk": ("kubernetes.io/azure-disk", "disk.csi.azure.com", "diskURI"),
    "cinder": ("kubernetes.io/cinder", "cinder.csi.openstack.org", "volumeID"),
    "portworxVolume": ("kubernetes.io/portworx-volume", "pxd.portworx.com", "volumeID"),
}
#: A StorageClass provisioner of those plugins -> the CSI driver its volumes count as.
MIGRATED_PROVISIONERS = {plugin: driver for plugin, driver, _ in IN_TREE_MIGRATED.values()}


def migrated_csi(spec: Mapping[str, Any]) -> tuple[str, str] | None:
    """A PersistentVolume ``spec``'s (or a pod's volume's) in-tree source of a migrated plugin as (its CSI
    driver, the volume's id), or None. An EBS volume id ``aws://<zone>/vol-1`` is ``vol-1``, as the
    migration names it. A GCE disk is its ``pdName`` inline and in a PersistentVolume alike (one disk,
    one attachment), where kube-scheduler names a PersistentVolume's by its zone label too."""
    for source, (_, driver, field_name) in IN_TREE_MIGRATED.items():
        section = spec.get(source)
        if isinstance(section, Mapping):
            handle = section.get(field_name)
            if isinstance(handle, str) and handle:
                if source == "awsElasticBlockStore" and handle.startswith("aws://"):
                    handle = handle.rsplit("/", 1)[-1]
                return driver, handle
    return None
