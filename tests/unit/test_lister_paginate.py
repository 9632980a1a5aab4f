"""The one pagination loop (volsched.kube.lister.paginate) on scripted answers: a 410 Gone on a continue
token starts the listing again, a bounded number of times; a 410 on a first page is not a continue's and
is raised. (The expiry itself, on a real apiserver: tests/e2e/test_kube_list_expired.py.)"""

from __future__ import annotations

import json

import pytest

from volsched.kube.errors import ApiException
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
