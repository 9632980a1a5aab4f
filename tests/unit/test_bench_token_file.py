"""bench/bind_throughput.py's token file, which each Go process it spawns (the creator, the bench's
watch, the bare binder) reads once at its start: written again for the next process while the last one
reads it, a reader must never see it empty. The bare binder is spawned just after the bench's watch: a
watch that read the file between its truncation and its write sent an empty token, was refused (401)
every time, and saw no pod created nor bound while the binder bound them all (the ceiling's empty rows,
1 run in 4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bind_throughput import Conn, _token_file

#: Reads the file until the stop file exists; prints "reading" after its first read, then how many reads
#: found the file empty, and how many there were.
READER = """
import os, sys
path, stop = sys.argv[1], sys.argv[2]
empty = reads = 0
while True:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        continue
    reads += 1
    empty += not data
    if reads == 1:
        print("reading", flush=True)
    if os.path.exists(stop):
        break
print(empty, reads, flush=True)
"""


def test_a_process_reading_the_token_file_while_it_is_written_again_never_finds_it_empty(
    tmp_path: Path,
) -> None:
    conn = Conn("https://127.0.0.1:6443", "ca.crt", "a-token-" + "x" * 800)
    path = _token_file(conn, tmp_path)
    stop = tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(path), str(stop)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert reader.stdout is not None
        assert reader.stdout.readline().strip() == "reading"
        for _ in range(3000):
            assert _token_file(conn, tmp_path) == path
        stop.touch()
        empty, reads = map(int, reader.stdout.readline().split())
    finally:
        reader.kill()
        reader.wait()
    assert reads > 1
    assert empty == 0
    assert path.read_text() == conn.token
