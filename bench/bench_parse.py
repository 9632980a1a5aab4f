"""Benchmark of reading large simulator input: a file of N MB of valid Pods (gangs of 8, a few labels,
requests and limits), generated here.

It times ``volsched.simulate.load_documents`` (the bounded loader: libyaml's parser when PyYAML has
it, an iterative composer with the depth and alias bounds, safe construction) and the loading the
simulator did before (``yaml.safe_load_all`` on the text: PyYAML's pure-Python loader) on a smaller
file, both as MB/s of this process's CPU time (the machine is shared: wall-clock time would mostly
measure the neighbours), then builds the simulator's cluster state from the loaded documents (quantities,
labels and names checked). The pure-Python loader on 50 MB takes many minutes, hence its own size.

    python bench/bench_parse.py                    # 50 MB, the old loader on 5 MB
    python bench/bench_parse.py --mb 10 --before-mb 2
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import yaml
from machine import describe


def pod_yaml(i: int) -> str:
    return f"""---
apiVersion: v1
kind: Pod
metadata:
  name: job-{i // 8}-{i % 8}
  namespace: team-{i % 16}
  labels: {{app.kubernetes.io/name: trainer, job: job-{i // 8}, tier: batch-{i % 10}}}
  annotations:
    scheduling.k8s.io/group-name: job-{i // 8}
spec:
  schedulerName: volsched
  priority: {i % 3}
  containers:
  - name: main
    image: registry.example.com/trainer:1.0
    resources:
      requests: {{cpu: 500m, memory: 1Gi}}
      limits: {{cpu: "1", memory: 2Gi}}
"""


def write_pods(path: Path, megabytes: float) -> int:
    target = int(megabytes * 1024 * 1024)
    size, count = 0, 0
    with path.open("w") as f:
        f.write(
            'apiVersion: v1\nkind: Node\nmetadata: {name: n0}\nstatus: {allocatable: {cpu: "64", memory: 256Gi,'
            ' pods: "110"}}\n'
        )
        while size < target:
            text = pod_yaml(count)
            f.write(text)
            size += len(text)
            count += 1
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the file the new loader reads")
    parser.add_argument("--before-mb", type=float, default=5.0, help="size of the file the old loader reads")
    args = parser.parse_args()

    from volsched.simulate import Simulator, load_documents

    print("machine:", describe(f"PyYAML {yaml.__version__} (libyaml: {yaml.__with_libyaml__})"))
    with tempfile.TemporaryDirectory() as tmp:
        big, small = Path(tmp) / "pods.yaml", Path(tmp) / "pods-small.yaml"
        pods = write_pods(big, args.mb)
        small_pods = write_pods(small, args.before_mb)
        mb = big.stat().st_size / 2**20
        small_mb = small.stat().st_size / 2**20

        t = time.process_time()
        list(yaml.safe_load_all(small.read_text()))
        before = time.process_time() - t
        t = time.process_time()
        load_documents([small])
        after_small = time.process_time() - t

        t = time.process_time()
        docs = load_documents([big])
        after = time.process_time() - t
        t = time.process_time()
        Simulator(docs)
        build = time.process_time() - t
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(f"{'file':>22} {'pods':>8} {'MB':>6} {'cpu s':>8} {'MB/s':>6}")
    print(
        f"{'old: safe_load_all':>22} {small_pods:>8} {small_mb:>6.1f} {before:>8.2f} {small_mb / before:>6.2f}"
    )
    print(
        f"{'new: load_documents':>22} {small_pods:>8} {small_mb:>6.1f} {after_small:>8.2f} {small_mb / after_small:>6.2f}"
    )
    print(f"{'new: load_documents':>22} {pods:>8} {mb:>6.1f} {after:>8.2f} {mb / after:>6.2f}")
    print(f"{'new: + cluster state':>22} {pods:>8} {mb:>6.1f} {build:>8.2f} {mb / build:>6.2f}")
    print(f"speed-up of the loader on the same file: x{before / after_small:.1f}; peak RSS {peak:.0f} MiB")
    print(f"old loader on {mb:.0f} MB, extrapolated: {mb / (small_mb / before):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
