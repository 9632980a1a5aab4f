"""Devices claimed through Dynamic Resource Allocation (``resource.k8s.io/v1``), as the engine sees them.

A pod names ResourceClaims in ``spec.resourceClaims`` (:class:`PodClaim`): a claim by name, or one made
for the pod from a ResourceClaimTemplate (by the resource claim controller, which writes its name into the
pod's ``status.resourceClaimStatuses``).

Plain data and pure logic: nothing here reads the API or knows about sessions. What is supported and
what is refused is written up in ``docs/dra.md``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PodClaim:
    """One entry of a pod's ``spec.resourceClaims``: the name its containers use, and the ResourceClaim
    it stands for (``claim``; "" for a claim made from ``template`` that the resource claim controller has
    not made yet, or not said so in the pod's status)."""

    name: str
    claim: str
    template: str = ""

    def describe(self) -> str:
        if self.claim:
            return self.claim
        return f"{self.name} (from template {self.template}, not made yet)"
