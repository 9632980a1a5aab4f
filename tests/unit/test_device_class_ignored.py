"""A DeviceClass's spec.extendedResourceName (Kubernetes' DRAExtendedResource: a pod asking that extended
resource gets a device of the class) is not honoured: the class is taken, and the field is named on it."""

from __future__ import annotations

from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState


def device_class(name: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_a_device_class_that_backs_an_extended_resource_is_taken_and_says_the_field_is_ignored() -> None:
    state = ClusterState()
    feeder = Feeder(state)
    assert feeder.apply("DeviceClass", device_class("gpu", extendedResourceName="example.com/gpu"))
    assert "gpu" in state.device_classes  # claims of the class are allocated as ever
    message = feeder.rejected["DeviceClass gpu"].message
    assert message.startswith("DeviceClass gpu: spec.extendedResourceName 'example.com/gpu' is ignored")
    assert "claim the device in the pod's spec.resourceClaims instead" in message
    assert feeder.apply("DeviceClass", device_class("plain"))
    assert "DeviceClass plain" not in feeder.rejected
    feeder.apply("DeviceClass", device_class("gpu"))  # the field taken off: nothing to say any more
    assert "DeviceClass gpu" not in feeder.rejected
