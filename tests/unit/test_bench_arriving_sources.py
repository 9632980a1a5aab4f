"""bench/arriving_latency.py's ``--source`` checkouts each run under a label of its own (which names its
runs' directories), and a SIGTERM ends a bench as an exception does: its cleanup runs (the children
killed, the round's control plane stopped), where by default the process ended where it stood."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from arriving_latency import source_labels  # noqa: E402

COMMITS = {"a": "1111111", "b": "1111111", "c": "unknown commit", "d": "unknown commit", "e": "2222222"}


@pytest.mark.parametrize(
    ("dirs", "labels"),
    [
        (["/x/a"], ["volsched"]),
        (["/x/a", "/x/e"], ["volsched@1111111", "volsched@2222222"]),
        (["/x/a", "/x/b", "/x/e"], ["volsched@1111111:a", "volsched@1111111:b", "volsched@2222222"]),
        (["/x/c", "/x/d"], ["volsched@unknown commit:c", "volsched@unknown commit:d"]),
        (["/x/c", "/y/c"], ["volsched@unknown commit:c", "volsched@unknown commit:c#2"]),
    ],
    ids=["one", "two commits", "two at one commit", "two not git checkouts", "same name too"],
)
def test_each_source_has_a_label_of_its_own(dirs: list[str], labels: list[str]) -> None:
    sources = [Path(d) for d in dirs]
    named = source_labels(sources, commit=lambda src: COMMITS[src.name])
    assert [named[s] for s in sources] == labels


def test_a_sigterm_ends_the_bench_through_its_cleanup() -> None:
    script = textwrap.dedent(
        f"""
        import sys, threading
        sys.path.insert(0, {str(BENCH)!r})
        from bind_throughput import exit_on_sigterm
        exit_on_sigterm()
        try:
            print("running", flush=True)
            threading.Event().wait()
        finally:
            print("cleaned up", flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "running\n"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert out == "cleaned up\n"
    assert proc.returncode == 128 + signal.SIGTERM
