"""The waits a ListWatch chose after each failure, recorded (shared by the watch's unit and e2e tests)."""

from __future__ import annotations

from volsched.kube.watch import ListWatch


def recorded_waits(watch: ListWatch) -> list[float]:
    """The list each wait ``watch`` chooses after a failure is appended to, from now on (in order)."""
    waits: list[float] = []
    failed = watch._failed

    def recorded(exc: BaseException) -> float:
        waits.append(failed(exc))
        return waits[-1]

    watch._failed = recorded  # type: ignore[method-assign]
    return waits
