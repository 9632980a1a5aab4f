#!/usr/bin/env bash
# Build kube-apiserver, etcd, kube-controller-manager and kube-scheduler from
# the Go module proxy, at the versions pinned in this directory's go.mod/go.sum, and
# cache them outside the repository:
#
#   ${VOLSCHED_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/controlplane}/<k8s-version>-<stamp>/
#
# <stamp> is a hash of the inputs (go.mod, go.sum, etcd/main.go, this script,
# hack/lib/gobuild.sh): nothing is built when that directory holds binaries built from
# them. The last line printed on stdout is always the binary directory; progress goes
# to stderr. Exit code 3: no Go toolchain.
#
# Usage: hack/controlplane/build.sh [--print-dir] [--force]
#   --print-dir  only print the binary directory, build nothing
#   --force      rebuild even when cached
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib/gobuild.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/gobuild.sh"

GB_VERSION="$(gobuild_module_version k8s.io/kubernetes)"
etcd_version="$(gobuild_module_version go.etcd.io/etcd/server/v3)"
GB_WHAT="the control plane (kubernetes $GB_VERSION, etcd $etcd_version)"
GB_CACHE="${VOLSCHED_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/controlplane}"
GB_INPUTS=("$GB_MODULE_DIR/etcd/main.go")
# kube-controller-manager runs the controllers a test asks for (Job, ReplicaSet,
# garbage collector...); kube-scheduler is the reference scheduler of the benchmarks.
GB_BINS=(kube-apiserver etcd kube-controller-manager kube-scheduler)

gobuild_build() {
  local major minor vpkg=k8s.io/component-base/version ldflags
  major="${GB_VERSION#v}"; major="${major%%.*}"
  minor="${GB_VERSION#v*.}"; minor="${minor%%.*}"
  ldflags="-s -w -X $vpkg.gitVersion=$GB_VERSION -X $vpkg.gitMajor=$major -X $vpkg.gitMinor=$minor"
  ldflags+=" -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
  "$GO" build -trimpath -ldflags="$ldflags" -o "$1/" k8s.io/kubernetes/cmd/kube-apiserver ./etcd \
    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
}

gobuild_main "$@"
