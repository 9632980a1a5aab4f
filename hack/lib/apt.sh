# shellcheck shell=bash
# Sourced by the hack/ scripts that install a Debian package on demand (hack/metrics, hack/ui).
#
#   apt_sudo          sets SUDO: "" as root, "sudo" when there is one; returns 1 when neither
#   apt_install PKG.. apt-get install without recommends (apt's output on stderr); when that fails,
#                     apt-get update and once more (a fresh machine's package lists are empty or old)

apt_sudo() {
  SUDO=""
  [[ "$(id -u)" == 0 ]] && return 0
  command -v sudo >/dev/null 2>&1 || return 1
  SUDO=sudo
}

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q --no-install-recommends "$@" >&2 \
    || { $SUDO apt-get update -q >&2 && $SUDO apt-get install -y -q --no-install-recommends "$@" >&2; }
}
