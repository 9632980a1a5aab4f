#!/usr/bin/env bash
# Build kube-apiserver, etcd, kube-controller-manager and kube-scheduler from
# the Go module proxy, at the versions pinned in this directory's go.mod/go.sum, and
# cache them outside the repository:
#
#   ${VOLSCHED_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/controlplane}/<k8s-version>/
#
# Does nothing when that directory already holds binaries built from the same
# inputs (go.mod, go.sum, etcd/main.go, this script). The last line printed on
# stdout is always the binary directory; progress goes to stderr.
#
# Usage: hack/controlplane/build.sh [--print-dir] [--force]
#   --print-dir  only print the binary directory, build nothing
#   --force      rebuild even when cached
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
print_only=0
force=0
for arg in "$@"; do
  case "$arg" in
    --print-dir) print_only=1 ;;
    --force) force=1 ;;
    -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

k8s_version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$here/go.mod")"
etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" && $2 ~ /^v/ {print $2; exit}' "$here/go.mod")"
if [[ -z "$k8s_version" || -z "$etcd_version" ]]; then
  echo "build.sh: cannot read the pinned versions from $here/go.mod" >&2
  exit 1
fi

cache_root="${VOLSCHED_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/controlplane}"
out="$cache_root/$k8s_version"

if [[ "$print_only" == 1 ]]; then
  echo "$out"
  exit 0
fi

# Everything that determines the binaries' content goes into the stamp.
stamp="$(cat "$here/go.mod" "$here/go.sum" "$here/etcd/main.go" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
# kube-controller-manager runs the controllers a test asks for (Job, ReplicaSet,
# garbage collector...); kube-scheduler is the reference scheduler of the benchmarks.
bins=(kube-apiserver etcd kube-controller-manager kube-scheduler)

is_cached() {
  [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" ]] || return 1
  local b
  for b in "${bins[@]}"; do
    [[ -x "$out/$b" ]] || return 1
  done
}

if [[ "$force" == 0 ]] && is_cached; then
  echo "$out"
  exit 0
fi

mkdir -p "$cache_root"
# Serialise concurrent builds of one version (two test sessions, a human and CI, ...).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache_root/.build-$k8s_version.lock"
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
  echo "build.sh: no 'go' on PATH (nor /usr/local/go/bin/go); cannot build the control plane" >&2
  exit 1
fi

pkgs=(k8s.io/kubernetes/cmd/kube-apiserver ./etcd k8s.io/kubernetes/cmd/kube-controller-manager
  k8s.io/kubernetes/cmd/kube-scheduler)

major="${k8s_version#v}"; major="${major%%.*}"
minor="${k8s_version#v*.}"; minor="${minor%%.*}"
vpkg=k8s.io/component-base/version
ldflags="-s -w -X $vpkg.gitVersion=$k8s_version -X $vpkg.gitMajor=$major -X $vpkg.gitMinor=$minor"
ldflags+=" -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"

tmp="$(mktemp -d "$cache_root/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "build.sh: building ${bins[*]} (kubernetes $k8s_version, etcd $etcd_version) into $out" >&2
start=$SECONDS
(
  cd "$here"
  CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--mod=readonly}" \
    "$go_bin" build -trimpath -ldflags="$ldflags" -o "$tmp/" "${pkgs[@]}"
)
echo "$stamp" >"$tmp/.stamp"
for b in "${bins[@]}"; do
  [[ -x "$tmp/$b" ]] || { echo "build.sh: $b was not produced" >&2; exit 1; }
done
# Swap the new directory in (a previous build may be there with another stamp).
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
