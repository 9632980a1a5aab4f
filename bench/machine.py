"""The one line every benchmark prints about the machine it ran on (the host, cpu model, cores, load
average, Python and the libraries that decide the figures). Benchmarks import it as ``machine`` because
``python bench/X.py`` puts this folder on the path."""

from __future__ import annotations

import os
import platform


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown cpu"


def describe(*libraries: str) -> str:
    """``host | cpu | N cores | load a, b, c | python X | <libraries> | platform``; the load average says
    how much else ran (this machine has 2 cores, so figures taken under load are not comparable)."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    parts = [
        platform.node(),
        _cpu_model(),
        f"{os.cpu_count()} cores",
        f"load {load}",
        f"python {platform.python_version()}",
        *libraries,
        platform.platform(),
    ]
    return " | ".join(parts)
