"""The one line every benchmark prints about the machine it ran on (the host, cpu model, cores, load
average, Python and the libraries that decide the figures), the load average alone (:func:`load_average`,
for a line before and after a run), and :func:`in_fresh_process`, which runs one grid point of a
benchmark in a process of its own. Benchmarks import it as ``machine`` because ``python bench/X.py`` puts
this folder on the path."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from typing import Any


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown cpu"


def load_average() -> str:
    """The load average over 1, 5 and 15 minutes, as ``a, b, c``."""
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def describe(*libraries: str) -> str:
    """``host | cpu | N cores | load a, b, c | python X | <libraries> | platform``; the load average says
    how much else ran (this machine has 2 cores, so figures taken beside other work are not comparable)."""
    parts = [
        platform.node(),
        _cpu_model(),
        f"{os.cpu_count()} cores",
        f"load {load_average()}",
        f"python {platform.python_version()}",
        *libraries,
        platform.platform(),
    ]
    return " | ".join(parts)


def in_fresh_process(script: str, *args: str) -> Any:
    """``script --json *args`` in a new Python process (its peak RSS its own, nothing warm from an earlier
    grid point); returns the JSON it printed."""
    cmd = [sys.executable, os.path.abspath(script), "--json", *args]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
