#!/usr/bin/env bash
# Start a throwaway Prometheus on 127.0.0.1 over DATA_DIR (e.g. blocks made by
# `promtool tsdb create-blocks-from openmetrics`), with no scrape targets, and block.
# The process replaces this shell (exec), so the caller's PID is Prometheus's.
#   usage: hack/metrics/start-prometheus.sh PORT DATA_DIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
port="${1:?usage: start-prometheus.sh PORT DATA_DIR}"
data_dir="${2:?usage: start-prometheus.sh PORT DATA_DIR}"

"$here/install-prometheus.sh" >&2
mkdir -p "$data_dir"
config="$data_dir/prometheus.yml"
[ -f "$config" ] || printf 'global:\n  scrape_interval: 15s\nscrape_configs: []\n' > "$config"
exec prometheus \
  --config.file="$config" \
  --storage.tsdb.path="$data_dir" \
  --storage.tsdb.retention.time=3650d \
  --web.listen-address="127.0.0.1:$port" \
  --log.level=warn
