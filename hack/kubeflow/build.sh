#!/usr/bin/env bash
# Build the Kubeflow training operator (v1: PyTorchJob, TFJob, MPIJob...; with
# --gang-scheduler-name=volcano it makes a Volcano PodGroup per job) from the Go
# module proxy, at the version pinned in this directory's go.mod/go.sum, and cache
# it outside the repository, with the CRDs of its kinds from the same module:
#
#   ${VOLSCHED_KUBEFLOW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/kubeflow}/<version>/training-operator
#   .../<version>/crds/kubeflow.org_*.yaml
#
# Does nothing when that directory already holds a binary built from the same
# inputs (go.mod, go.sum, this script). The last line printed on stdout is always
# the binary directory; progress goes to stderr. Exit code 3: no Go toolchain.
#
# Usage: hack/kubeflow/build.sh [--print-dir] [--force]
#   --print-dir  only print the binary directory, build nothing
#   --force      rebuild even when cached
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module=github.com/kubeflow/training-operator
print_only=0
force=0
for arg in "$@"; do
  case "$arg" in
    --print-dir) print_only=1 ;;
    --force) force=1 ;;
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

version="$(awk -v m="$module" '$1 == "require" && $2 == m {print $3; exit} $1 == m && $2 ~ /^v/ {print $2; exit}' "$here/go.mod")"
if [[ -z "$version" ]]; then
  echo "build.sh: cannot read the pinned $module version from $here/go.mod" >&2
  exit 1
fi

cache_root="${VOLSCHED_KUBEFLOW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/kubeflow}"
out="$cache_root/$version"

if [[ "$print_only" == 1 ]]; then
  echo "$out"
  exit 0
fi

stamp="$(cat "$here/go.mod" "$here/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"

is_cached() {
  [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" && -x "$out/training-operator" ]]
}

if [[ "$force" == 0 ]] && is_cached; then
  echo "$out"
  exit 0
fi

mkdir -p "$cache_root"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache_root/.build-$version.lock"
  flock 9
  if [[ "$force" == 0 ]] && is_cached; then
    echo "$out"
    exit 0
  fi
fi

go_bin="$(command -v go || true)"
if [[ -z "$go_bin" && -x /usr/local/go/bin/go ]]; then
  go_bin=/usr/local/go/bin/go
fi
if [[ -z "$go_bin" ]]; then
  echo "build.sh: no 'go' on PATH (nor /usr/local/go/bin/go); cannot build the training operator" >&2
  exit 3
fi

tmp="$(mktemp -d "$cache_root/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "build.sh: building $module $version into $out" >&2
start=$SECONDS
(
  cd "$here"
  export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--mod=readonly}"
  "$go_bin" build -trimpath -ldflags="-s -w" -o "$tmp/training-operator" "$module/cmd/training-operator.v1"
  src="$("$go_bin" list -m -f '{{.Dir}}' "$module")"
  mkdir -p "$tmp/crds"
  cp "$src"/manifests/base/crds/kubeflow.org_*.yaml "$tmp/crds/"
  chmod u+w "$tmp"/crds/*.yaml
)
echo "$stamp" >"$tmp/.stamp"
[[ -x "$tmp/training-operator" ]] || { echo "build.sh: training-operator was not produced" >&2; exit 1; }
if [[ -d "$out" ]]; then
  old="$out.old.$$"
  mv "$out" "$old"
  mv "$tmp" "$out"
  rm -rf "$old"
else
  mv "$tmp" "$out"
fi
trap - EXIT
echo "build.sh: done in $((SECONDS - start))s" >&2
ls -l "$out" >&2
echo "$out"
