#!/usr/bin/env bash
# Build kwok (fake nodes with heartbeats, pods that run and finish) from the Go
# module proxy, at the version pinned in this directory's go.mod/go.sum, and
# cache it outside the repository:
#
#   ${VOLSCHED_KWOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/kwok}/<kwok-version>-<stamp>/kwok
#
# <stamp> is a hash of the inputs (go.mod, go.sum, this script, hack/lib/gobuild.sh):
# nothing is built when that directory holds a binary built from them. The last line
# printed on stdout is always the binary directory; progress goes to stderr. Exit
# code 3: no Go toolchain.
#
# Usage: hack/kwok/build.sh [--print-dir] [--force]
#   --print-dir  only print the binary directory, build nothing
#   --force      rebuild even when cached
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib/gobuild.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/gobuild.sh"

GB_VERSION="$(gobuild_module_version sigs.k8s.io/kwok)"
GB_WHAT="kwok $GB_VERSION"
GB_CACHE="${VOLSCHED_KWOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/volsched/kwok}"
GB_BINS=(kwok)

gobuild_build() {
  "$GO" build -trimpath -ldflags="-s -w" -o "$1/" sigs.k8s.io/kwok/cmd/kwok
}

gobuild_main "$@"
