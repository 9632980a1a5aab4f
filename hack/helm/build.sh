#!/usr/bin/env bash
# Build the helm CLI (helm.sh/helm/v3/cmd/helm) from the Go module proxy, at the
# version pinned in this directory's go.mod/go.sum, and cache it outside the
# repository:
#
#   ${VOLSCHED_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/helm}/<helm-version>/helm
#
# Does nothing when that directory already holds a helm built from the same
# inputs (go.mod, go.sum, this script). The last line printed on stdout is
# always the binary's path; progress goes to stderr. Exit status 3 means there
# is no Go toolchain (the chart tests skip with that message).
#
# Usage: hack/helm/build.sh [--print-path] [--force]
#   --print-path  only print where the binary is (or would be), build nothing
#   --force       rebuild even when cached
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
print_only=0
force=0
for arg in "$@"; do
  case "$arg" in
    --print-path) print_only=1 ;;
    --force) force=1 ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

helm_version="$(awk '$1 == "require" && $2 == "helm.sh/helm/v3" {print $3; exit} $1 == "helm.sh/helm/v3" && $2 ~ /^v/ {print $2; exit}' "$here/go.mod")"
k8s_minor="$(awk '$1 == "k8s.io/client-go" && $2 ~ /^v0\./ {split($2, v, "."); print v[2]; exit}' "$here/go.mod")"
if [[ -z "$helm_version" || -z "$k8s_minor" ]]; then
  echo "build.sh: cannot read the pinned helm / client-go versions from $here/go.mod" >&2
  exit 1
fi

cache_root="${VOLSCHED_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/helm}"
out="$cache_root/$helm_version"

if [[ "$print_only" == 1 ]]; then
  echo "$out/helm"
  exit 0
fi

stamp="$(cat "$here/go.mod" "$here/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"

is_cached() {
  [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" && -x "$out/helm" ]]
}

if [[ "$force" == 0 ]] && is_cached; then
  echo "$out/helm"
  exit 0
fi

go_bin="$(command -v go || true)"
if [[ -z "$go_bin" && -x /usr/local/go/bin/go ]]; then
  go_bin=/usr/local/go/bin/go
fi
if [[ -z "$go_bin" ]]; then
  echo "build.sh: no 'go' on PATH (nor /usr/local/go/bin/go); cannot build helm" >&2
  exit 3
fi

mkdir -p "$cache_root"
# Serialise concurrent builds (two test sessions, a human and CI, ...).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache_root/.build.lock"
  flock 9
  if [[ "$force" == 0 ]] && is_cached; then
    echo "$out/helm"
    exit 0
  fi
fi

# What helm's own Makefile sets: the version `helm version` prints, and the Kubernetes version
# `helm template` assumes for .Capabilities without a cluster (that of its client-go).
vpkg=helm.sh/helm/v3/internal/version
ldflags="-s -w -X $vpkg.version=$helm_version -X $vpkg.gitTreeState=clean"
for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$k8s_minor"
done

tmp="$(mktemp -d "$cache_root/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "build.sh: building helm $helm_version into $out" >&2
start=$SECONDS
(
  cd "$here"
  CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--mod=readonly}" \
    "$go_bin" build -trimpath -ldflags="$ldflags" -o "$tmp/helm" helm.sh/helm/v3/cmd/helm
)
[[ -x "$tmp/helm" ]] || { echo "build.sh: helm was not produced" >&2; exit 1; }
echo "$stamp" >"$tmp/.stamp"
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
ls -l "$out/helm" >&2
echo "$out/helm"
