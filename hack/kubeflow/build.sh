#!/usr/bin/env bash
# Build the Kubeflow training operator (v1: PyTorchJob, TFJob, MPIJob...; with
# --gang-scheduler-name=volcano it makes a Volcano PodGroup per job) from the Go
# module proxy, at the version pinned in this directory's go.mod/go.sum, and cache
# it outside the repository, with the CRDs of its kinds from the same module:
#
#   ${VOLSCHED_KUBEFLOW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/kubeflow}/<version>-<stamp>/training-operator
#   .../<version>-<stamp>/crds/kubeflow.org_*.yaml
#
# <stamp> is a hash of the inputs (go.mod, go.sum, this script, hack/lib/gobuild.sh):
# nothing is built when that directory holds a binary built from them. The last line
# printed on stdout is always the binary directory; progress goes to stderr. Exit
# code 3: no Go toolchain.
#
# Usage: hack/kubeflow/build.sh [--print-dir] [--force]
#   --print-dir  only print the binary directory, build nothing
#   --force      rebuild even when cached
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib/gobuild.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/gobuild.sh"

module=github.com/kubeflow/training-operator
GB_VERSION="$(gobuild_module_version "$module")"
GB_WHAT="$module $GB_VERSION"
GB_CACHE="${VOLSCHED_KUBEFLOW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/kubeflow}"
GB_BINS=(training-operator)

gobuild_build() {
  "$GO" build -trimpath -ldflags="-s -w" -o "$1/training-operator" "$module/cmd/training-operator.v1"
  local src
  src="$("$GO" list -m -f '{{.Dir}}' "$module")"
  mkdir -p "$1/crds"
  cp "$src"/manifests/base/crds/kubeflow.org_*.yaml "$1/crds/"
  chmod u+w "$1"/crds/*.yaml
}

gobuild_main "$@"
