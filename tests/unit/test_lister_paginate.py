"""The one pagination loop (volsched.kube.lister.paginate) on scripted answers: a 410 Gone on a continue
token starts the listing again, a bounded number of times; a 410 on a first page is not a continue's and
is raised; pages listed early and here already are taken with nothing fetched for them. (The expiry itself, on a real apiserver: tests/e2e/test_kube_list_expired.py.)"""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, cast

import pytest

from volsched.kube.early import EarlyListing
from volsched.kube.errors import ApiException
from volsched.kube.kubeconfig import ClientConfig
from volsched.kube.lister import paginate


def _page(names: list[str], following: str = "") -> bytes:
    meta = {"resourceVersion": "9", **({"continue": following} if following else {})}
    return json.dumps({"metadata": meta, "items": [{"metadata": {"name": n}} for n in names]}).encode()


def _gone() -> ApiException:
    return ApiException(status=410, reason="Gone")


@pytest.mark.parametrize(
    ("restarts", "expiries", "listed"),
    [
        (3, 0, [(True, ["a"]), (False, ["b"])]),
        (3, 1, [(True, ["a"]), (True, ["a"]), (False, ["b"])]),
        (3, 3, [(True, ["a"])] * 4 + [(False, ["b"])]),
    ],
)
def test_a_continue_token_that_expired_starts_the_listing_again_from_its_first_page(
    restarts: int, expiries: int, listed: list[tuple[bool, list[str]]]
) -> None:
    asked: list[str] = []
    left = expiries

    def fetch(token: str) -> bytes:
        nonlocal left
        asked.append(token)
        if token and left:
            left -= 1
            raise _gone()
        return _page(["a"], "t") if not token else _page(["b"])

    pages = list(paginate(fetch, what="things", restarts=restarts))
    assert [(p.fresh, [o["metadata"]["name"] for o in p.items]) for p in pages] == listed
    assert asked == ["", "t"] * (expiries + 1)


def test_a_continue_token_expiring_more_often_than_allowed_is_raised() -> None:
    def fetch(token: str) -> bytes:
        if token:
            raise _gone()
        return _page(["a"], "t")

    with pytest.raises(ApiException) as raised:
        list(paginate(fetch, what="things", restarts=2))
    assert raised.value.status == 410


def test_a_first_page_answered_410_is_raised_not_listed_again() -> None:
    asked: list[str] = []

    def fetch(token: str) -> bytes:
        asked.append(token)
        raise _gone()

    with pytest.raises(ApiException):
        list(paginate(fetch, what="things"))
    assert asked == [""]


class _Recording(ThreadPoolExecutor):
    """An executor that records the tokens of the pages it was asked to fetch."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.asked: list[str] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.asked.append(args[0])
        return super().submit(fn, *args, **kwargs)


def test_pages_at_hand_are_taken_as_they_are_with_nothing_fetched_for_them() -> None:
    """Pages listed early and here already go straight into the listing: neither fetched again nor given
    to the fetch-ahead executor (a thread's start each); the pages after them are fetched as before."""
    here = {"": _page(["a"], "t1"), "t1": _page(["b"], "t2")}
    fetched: list[str] = []

    def fetch(token: str) -> bytes:
        fetched.append(token)
        return _page(["c"], "t3") if token == "t2" else _page(["d"])

    with _Recording() as ahead:
        pages = list(paginate(fetch, what="things", ahead=ahead, at_hand=lambda t: here.pop(t, None)))
    assert [o["metadata"]["name"] for p in pages for o in p.items] == ["a", "b", "c", "d"]
    assert ahead.asked == fetched == ["t2", "t3"]
    assert here == {}


def test_an_early_page_not_here_yet_is_not_waited_for_at_hand() -> None:
    """``EarlyListing.at_hand`` answers at once: None for a page on its way (``page`` would wait for it),
    the page itself once it came, and None once taken."""
    listing = EarlyListing(cast(ClientConfig, None), "/api/v1/pods")
    listing._next = "t"  # the page after "t" is on its way
    assert listing.at_hand("t") is None
    with listing._done:
        listing._fetched["t"] = b"page"
    assert listing.at_hand("t") == b"page"
    assert listing.at_hand("t") is None
