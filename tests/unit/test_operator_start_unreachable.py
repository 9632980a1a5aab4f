"""``volsched run`` against an apiserver that does not answer (not up yet, or cut off): the start asks
again until it answers, as kube-scheduler's informers do, and a signal meanwhile ends it cleanly. The
defect: the first listing's connection refused ended the start in a traceback (exit 1) at once, while the
Lease's line said it was retrying quietly; and a signal meanwhile was not heard until the listing ended."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_start_waits_for_an_apiserver_that_does_not_answer_and_a_signal_ends_it(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        f'clusters: [{{name: k, cluster: {{server: "http://127.0.0.1:{_closed_port()}"}}}}]\n'
        "users: [{name: u, user: {token: t}}]\n"
    )
    argv = ["run", "--kubeconfig", str(kubeconfig), "--metrics-host", "127.0.0.1", "--metrics-port", "0"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "volsched", *argv], stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    assert proc.stderr is not None
    try:
        lines: list[str] = []
        for line in proc.stderr:  # until the first listing was refused and is asked again
            lines.append(line)
            if "cache not synced: its first listing waits for the kube-apiserver (listing " in line:
                break
        else:
            raise AssertionError("".join(lines))
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate()
    finally:
        if proc.poll() is None:  # (a failure: not left running)
            proc.kill()
            proc.wait()
    lines.append(rest)
    said = "".join(lines)
    assert proc.returncode == 0, said
    assert "Traceback" not in said and "stopping (signal)" in said, said
