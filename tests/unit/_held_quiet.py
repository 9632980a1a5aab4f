"""A stand-in for the operator's ``wait_quiet`` (are the sessions quiet?) that the test holds: what is made
behind the sessions (the Lease's renewal, the ConfigMap's poll) waits on it first."""

from __future__ import annotations

import threading


class HeldQuiet:
    """``wait_quiet(most)``: records ``most`` (``asked``), says it was entered (``entered``) and returns
    once the test says the sessions are quiet (``quiet``; 10 s at most, and whether they are)."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.entered, self.quiet = threading.Event(), threading.Event()

    def __call__(self, most: float) -> bool:
        self.asked.append(most)
        self.entered.set()
        return self.quiet.wait(10)
