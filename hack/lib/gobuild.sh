# shellcheck shell=bash
# Sourced by hack/*/build.sh: build Go commands from a build-only module (go.mod/go.sum next to the
# build.sh) and cache them outside the repository, in a directory named by the pinned version and a
# hash of everything that determines the binaries:
#
#   <cache root>/<version>-<12 hex digits of the stamp>/
#
# so that checkouts with different build inputs each keep their own directory in one shared cache
# (none rebuilds over another's). Nothing is deleted: an older directory may still be in use.
#
# The build.sh sets these, then calls `gobuild_main "$@"`:
#   GB_WHAT     what is built, for messages ("kwok v0.8.0")
#   GB_CACHE    the cache root (its VOLSCHED_*_CACHE, else under ${XDG_CACHE_HOME:-$HOME/.cache}/volsched)
#   GB_VERSION  the pinned version (gobuild_module_version reads it from go.mod)
#   GB_BINS     array: the executables the build must produce
#   GB_INPUTS   array, optional: files besides go.mod, go.sum, the build.sh and this file that
#               determine the binaries
#   GB_PRINT    optional: a name under the directory to print instead of the directory (helm)
#   GB_PRINT_FLAG  optional: the option that only prints (default --print-dir)
# and defines `gobuild_build DIR`: builds into DIR, run in a subshell in the module's directory with
# "$GO" the toolchain, CGO_ENABLED=0 and GOFLAGS (default -mod=readonly) exported, `set -e` on.
#
# What gobuild_main does (each build.sh documents it): --print-dir prints the directory and builds
# nothing; a directory holding the binaries and the same stamp is used as is; otherwise the build
# runs into a temporary directory that is then moved into place, under flock (concurrent builds of
# the same inputs wait for each other). --force rebuilds. The last stdout line is the directory;
# progress goes to stderr. Exit status 3: no Go toolchain ($VOLSCHED_GO, else go on PATH, else
# /usr/local/go/bin/go); 2: a bad argument.

GB_SCRIPT="${BASH_SOURCE[1]}"
GB_LIB="${BASH_SOURCE[0]}"
GB_MODULE_DIR="$(cd "$(dirname "$GB_SCRIPT")" && pwd)"
GB_ME="${GB_SCRIPT#"$(cd "$GB_MODULE_DIR/../.." && pwd)/"}"
GB_INPUTS=()
GB_PRINT=""
GB_PRINT_FLAG="--print-dir"

gobuild_die() {
  echo "$GB_ME: $2" >&2
  exit "$1"
}

# The version of a module required in go.mod (either `require M vX` or a line of a require block).
gobuild_module_version() {
  local v
  v="$(awk -v m="$1" '($1 == "require" && $2 == m) {print $3; exit} ($1 == m && $2 ~ /^v/) {print $2; exit}' \
    "$GB_MODULE_DIR/go.mod")"
  [[ -n "$v" ]] || gobuild_die 1 "cannot read the pinned $1 version from $GB_MODULE_DIR/go.mod"
  echo "$v"
}

# The Go toolchain: $VOLSCHED_GO when set, else `go` on PATH, else /usr/local/go/bin/go.
gobuild_find_go() {
  if [[ -n "${VOLSCHED_GO:-}" ]]; then
    [[ -x "$VOLSCHED_GO" ]] || gobuild_die 3 "VOLSCHED_GO=$VOLSCHED_GO is not an executable; cannot build $GB_WHAT"
    echo "$VOLSCHED_GO"
    return
  fi
  local go
  go="$(command -v go || true)"
  if [[ -z "$go" && -x /usr/local/go/bin/go ]]; then
    go=/usr/local/go/bin/go
  fi
  [[ -n "$go" ]] || gobuild_die 3 "no 'go' on PATH (nor /usr/local/go/bin/go); cannot build $GB_WHAT"
  echo "$go"
}

gobuild_is_cached() {
  [[ -f "$1/.stamp" && "$(cat "$1/.stamp")" == "$2" ]] || return 1
  local b
  for b in "${GB_BINS[@]}"; do
    [[ -x "$1/$b" ]] || return 1
  done
}

gobuild_main() {
  local print_only=0 force=0 arg
  for arg in "$@"; do
    case "$arg" in
      "$GB_PRINT_FLAG") print_only=1 ;;
      --force) force=1 ;;
      -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$GB_SCRIPT"; exit 0 ;;
      *) gobuild_die 2 "unknown argument: $arg" ;;
    esac
  done

  local stamp out result
  stamp="$(cat "$GB_MODULE_DIR/go.mod" "$GB_MODULE_DIR/go.sum" "${GB_INPUTS[@]}" "$GB_SCRIPT" "$GB_LIB" \
    | sha256sum | cut -d' ' -f1)"
  out="$GB_CACHE/$GB_VERSION-${stamp:0:12}"
  result="$out${GB_PRINT:+/$GB_PRINT}"
  if [[ "$print_only" == 1 ]] || { [[ "$force" == 0 ]] && gobuild_is_cached "$out" "$stamp"; }; then
    echo "$result"
    exit 0
  fi

  GO="$(gobuild_find_go)"
  mkdir -p "$GB_CACHE"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$GB_CACHE/.build-${out##*/}.lock"
    flock 9
    if [[ "$force" == 0 ]] && gobuild_is_cached "$out" "$stamp"; then
      echo "$result"
      exit 0
    fi
  fi

  GB_TMP="$(mktemp -d "$GB_CACHE/.build.XXXXXX")"
  trap 'rm -rf "$GB_TMP"' EXIT
  echo "$GB_ME: building $GB_WHAT into $out" >&2
  local start=$SECONDS b
  (
    set -e
    cd "$GB_MODULE_DIR"
    export GO CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--mod=readonly}"
    gobuild_build "$GB_TMP"
  )
  for b in "${GB_BINS[@]}"; do
    [[ -x "$GB_TMP/$b" ]] || gobuild_die 1 "$b was not produced"
  done
  echo "$stamp" >"$GB_TMP/.stamp"
  if [[ -d "$out" ]]; then  # --force: swap the new directory in
    local old="$out.old.$$"
    mv "$out" "$old"
    mv "$GB_TMP" "$out"
    rm -rf "$old"
  else
    mv "$GB_TMP" "$out"
  fi
  trap - EXIT
  echo "$GB_ME: done in $((SECONDS - start))s" >&2
  ls -l "$out" >&2
  echo "$result"
}
