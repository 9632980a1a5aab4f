#!/usr/bin/env bash
# Start one Elasticsearch 7.10.2 node on 127.0.0.1 and block (the JVM replaces this shell, so the
# caller's PID is the JVM's; SIGTERM stops it cleanly). Prints "READY <port>" when the cluster is up.
#   usage: hack/metrics/start-es.sh HTTP_PORT DATA_DIR [TRANSPORT_PORT]
# Env: ES_HEAP (default 512m).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
http_port="${1:?usage: start-es.sh HTTP_PORT DATA_DIR [TRANSPORT_PORT]}"
data_dir="${2:?usage: start-es.sh HTTP_PORT DATA_DIR [TRANSPORT_PORT]}"
transport_port="${3:-$((http_port + 100))}"
heap="${ES_HEAP:-512m}"

"$here/build-es.sh" >&2
mkdir -p "$data_dir"
proj="$here/es-runner"
exec java -Xms"$heap" -Xmx"$heap" -XX:+UseSerialGC -Djava.awt.headless=true \
  -cp "$proj/target/classes:$(cat "$proj/target/classpath.txt")" \
  volsched.esrunner.Main "$http_port" "$transport_port" "$data_dir"
