"""Pages listed at the process's start serve only an operator started with the same kubeconfig, and the
arguments they are begun from are read only in the spellings that cannot be taken for another (pure)."""

from __future__ import annotations

import json

import pytest

from volsched.kube import early
from volsched.kube.early import EarlyListing, _continue, _Early, claim, kubeconfig_arg
from volsched.kube.kubeconfig import ClientConfig

ARGS = [
    (["--kubeconfig", "/k"], (True, "/k")),
    (["--", "--kubeconfig=/k", "--namespace", "ns"], (True, "/k")),
    (["--namespace", "ns"], (True, None)),  # in-cluster, then the default kubeconfig
    (["--kubeconf", "/k"], (False, None)),  # an abbreviation argparse would take: not read here
    (["--kube=/k"], (False, None)),
    (["--help"], (False, None)),
    (["--kubeconfig"], (False, None)),  # no value: argparse refuses it
]


@pytest.mark.parametrize(("argv", "read"), ARGS)
def test_the_kubeconfig_is_read_from_the_arguments_only_when_spelt_out(
    argv: list[str], read: tuple[bool, str | None]
) -> None:
    assert kubeconfig_arg(argv) == read


def test_a_pages_continue_token_is_read_from_its_metadata_or_from_the_whole_page() -> None:
    page = {
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "9", "continue": "abc"},
        "items": [],
    }
    assert _continue(json.dumps(page, separators=(",", ":")).encode()) == "abc"
    last = {"metadata": {"resourceVersion": "9"}, "items": [{"metadata": {"name": "p"}}]}
    assert _continue(json.dumps(last).encode()) == ""
    # Metadata after the items (not the apiserver's order): the whole page is read.
    late = {"items": [{"metadata": {"name": "p", "labels": {"a": "b"}}}], "metadata": {"continue": "xyz"}}
    assert _continue(json.dumps(late).encode()) == "xyz"


def test_early_pages_are_claimed_once_and_only_for_the_same_kubeconfig(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = ClientConfig("https://127.0.0.1:1")
    listing = EarlyListing(cfg, "/api/v1/pods")  # never started: nothing fetched
    monkeypatch.setattr(early, "_early", _Early("/a", cfg, {"Pod": listing}))
    assert claim("/b") is None  # another kubeconfig: dropped
    assert listing.page("") is None
    assert claim("/a") is None  # and gone
    monkeypatch.setattr(early, "_early", _Early("/a", cfg, {"Pod": listing}))
    claimed = claim("/a")
    assert claimed is not None and claimed[0] is cfg and claimed[1] == {"Pod": listing}
    assert claim("/a") is None
