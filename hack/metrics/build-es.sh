#!/usr/bin/env bash
# Build hack/metrics/es-runner (a single-node Elasticsearch 7.10.2 from Maven Central) if it is not
# built yet or its sources changed. Idempotent; Maven caches artifacts in ~/.m2 as usual.
# Needs Java 17+ and Maven; installs Debian's openjdk-17-jre-headless/maven when they are missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=SCRIPTDIR/../lib/apt.sh
source "$here/../lib/apt.sh"
proj="$here/es-runner"
stamp="$proj/target/classpath.txt"

if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
  apt_sudo || { echo "build-es.sh: need root (or sudo) to apt-get install Java 17 and Maven" >&2; exit 1; }
  apt_install openjdk-17-jdk-headless maven
fi

if [ -f "$stamp" ] && [ -z "$(find "$proj/pom.xml" "$proj/src" -newer "$stamp" -print -quit)" ]; then
  # Built and up to date; still make sure every jar on the classpath is present (e.g. ~/.m2 wiped).
  missing=0
  IFS=":" read -r -a jars < "$stamp" || true  # no trailing newline
  for jar in "${jars[@]}"; do [ -f "$jar" ] || { missing=1; break; }; done
  [ "$missing" = 0 ] && exit 0
fi

mvn -q -B -f "$proj/pom.xml" package -DskipTests
touch "$stamp"
test -s "$stamp"
