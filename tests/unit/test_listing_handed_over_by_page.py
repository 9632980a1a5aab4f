"""A listing's page is handed over under one hold of the watch's hand-over lock, not one an object (the
listing at start hands over tens of thousands of objects), by the same rules as one object at a time: an
object already handed over at its version is passed over, one the receiver fails on is logged and
passed over with its last good version kept (the next relist hands it over again), what the listing
lacks is handed over as DELETED."""

from __future__ import annotations

import json
import threading
from typing import Any

from volsched.kube.lister import WATCHED
from volsched.kube.watch import ListWatch

PODS = next(k for k in WATCHED if k.kind == "Pod")


def pod(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": rv}}


def pages(*pods_by_page: list[dict[str, Any]]) -> dict[str, bytes]:
    """A listing's pages by the continue token that asks for each ("" the first)."""
    out = {}
    for i, items in enumerate(pods_by_page):
        following = str(i + 1) if i + 1 < len(pods_by_page) else ""
        body = {"metadata": {"resourceVersion": "50", "continue": following}, "items": items}
        out["" if i == 0 else str(i)] = json.dumps(body).encode()
    return out


class Early:
    """Pages by continue token, as an early listing hands them over (every listing's here)."""

    def __init__(self, by_token: dict[str, bytes]) -> None:
        self.by_token = by_token

    def page(self, token: str) -> bytes | None:
        return self.by_token.get(token)

    at_hand = page  # every page here already

    def drop(self) -> None:
        pass


class CountingLock:
    """A lock that counts how often it is taken."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.taken = 0

    def __enter__(self) -> bool:
        self.taken += 1
        return self.lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.lock.__exit__(*exc)


def listing(by_token: dict[str, bytes], sink: Any) -> ListWatch:
    w = ListWatch(None, PODS, on_event=sink)
    w._early = Early(by_token)  # type: ignore[assignment]  # what its first listing takes
    return w


def test_a_page_is_handed_over_under_one_hold_of_the_lock() -> None:
    got: list[str] = []
    w = listing(
        pages([pod(f"a{i}", "10") for i in range(40)], [pod(f"b{i}", "10") for i in range(40)]),
        lambda type_, obj: got.append(f"{type_} {obj['metadata']['name']}"),
    )
    lock = CountingLock()
    w._handing = lock  # type: ignore[assignment]
    w.relist()
    assert len(got) == 80 and got[0] == "ADDED a0" and got[-1] == "ADDED b39"
    assert lock.taken <= 3  # a page each, and the one that looks for what went (not 80)


def test_the_page_keeps_the_rules_of_one_object_at_a_time() -> None:
    got: list[str] = []
    failing = {"bad"}

    def sink(type_: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if name in failing:
            raise TypeError("a decoder bug")
        got.append(f"{type_} {name} {obj['metadata']['resourceVersion']}")
        assert obj["kind"] == "Pod" and obj["apiVersion"] == "v1"

    w = listing(pages([pod("a", "10"), pod("bad", "11")], [pod("b", "12"), pod("c", "13")]), sink)
    w.relist()
    assert got == ["ADDED a 10", "ADDED b 12", "ADDED c 13"]
    assert "ns/bad" not in w.known  # due again at the next relist
    assert w.known["ns/a"] == ("10", "u-a")

    # A relist (after an outage, say): a unchanged, b changed, c gone, bad taken now.
    failing.clear()
    got.clear()
    w._early = Early(pages([pod("a", "10"), pod("bad", "11")], [pod("b", "20")]))  # type: ignore[assignment]
    w.relist()
    assert got == ["ADDED bad 11", "ADDED b 20", "DELETED c 50"]
    assert set(w.known) == {"ns/a", "ns/bad", "ns/b"}
