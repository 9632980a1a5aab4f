"""Stand-ins for the writer's Lease fence, shared by the writer's and the port's unit tests and the e2e
tests of the leader and of status writes."""

from __future__ import annotations


class ClosingFence:
    """A fence that lets ``open_for`` writes through and then closes (the Lease could not be renewed)."""

    def __init__(self, open_for: int) -> None:
        self.left = open_for

    def renew_if_due(self) -> bool:
        return self.left > 0

    def time_left(self) -> float:
        self.left -= 1
        return 1.0 if self.left >= 0 else 0.0

    def call_timeout(self, wanted: float) -> float:
        return wanted


class Fence:
    """A Lease as the writer sees it: open while ``open`` (the test closes and opens it); ``acquired_at``
    names the holding."""

    def __init__(self) -> None:
        self.open = True
        self.acquired_at = 1.0

    def renew_if_due(self) -> bool:
        return self.open

    def time_left(self) -> float:
        return 5.0 if self.open else 0.0

    def call_timeout(self, wanted: float) -> float:
        return wanted
