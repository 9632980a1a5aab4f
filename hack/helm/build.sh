#!/usr/bin/env bash
# Build the helm CLI (helm.sh/helm/v3/cmd/helm) from the Go module proxy, at the
# version pinned in this directory's go.mod/go.sum, and cache it outside the
# repository:
#
#   ${VOLSCHED_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/helm}/<helm-version>-<stamp>/helm
#
# <stamp> is a hash of the inputs (go.mod, go.sum, this script, hack/lib/gobuild.sh):
# nothing is built when that directory holds a helm built from them. The last line
# printed on stdout is always the binary's path; progress goes to stderr. Exit status
# 3 means there is no Go toolchain (the chart tests skip with that message).
#
# Usage: hack/helm/build.sh [--print-path] [--force]
#   --print-path  only print where the binary is (or would be), build nothing
#   --force       rebuild even when cached
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib/gobuild.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/gobuild.sh"

GB_VERSION="$(gobuild_module_version helm.sh/helm/v3)"
GB_WHAT="helm $GB_VERSION"
GB_CACHE="${VOLSCHED_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/helm}"
GB_BINS=(helm)
GB_PRINT=helm
GB_PRINT_FLAG=--print-path

k8s_minor="$(awk '$1 == "k8s.io/client-go" && $2 ~ /^v0\./ {split($2, v, "."); print v[2]; exit}' "$GB_MODULE_DIR/go.mod")"
[[ -n "$k8s_minor" ]] || gobuild_die 1 "cannot read the pinned client-go version from $GB_MODULE_DIR/go.mod"

gobuild_build() {
  # What helm's own Makefile sets: the version `helm version` prints, and the Kubernetes version
  # `helm template` assumes for .Capabilities without a cluster (that of its client-go).
  local vpkg=helm.sh/helm/v3/internal/version p
  local ldflags="-s -w -X $vpkg.version=$GB_VERSION -X $vpkg.gitTreeState=clean"
  for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldflags+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$k8s_minor"
  done
  "$GO" build -trimpath -ldflags="$ldflags" -o "$1/helm" helm.sh/helm/v3/cmd/helm
}

gobuild_main "$@"
