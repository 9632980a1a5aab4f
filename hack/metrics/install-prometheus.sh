#!/usr/bin/env bash
# Make /usr/bin/prometheus and /usr/bin/promtool available (Debian's `prometheus` package) for the
# metrics tests. Idempotent: does nothing when both binaries are already on PATH. Never starts the
# packaged system service (a policy-rc.d that denies service starts is in place during the install).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/apt.sh"

if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
  exit 0
fi

apt_sudo || { echo "install-prometheus.sh: need root (or sudo) to apt-get install prometheus" >&2; exit 1; }

policy=/usr/sbin/policy-rc.d
added_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod +x "$policy"
  added_policy=1
fi
cleanup() { if [ "$added_policy" = 1 ]; then $SUDO rm -f "$policy"; fi; }
trap cleanup EXIT

apt_install prometheus
# If an init system started the packaged service anyway, stop it: the tests run their own servers.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
  $SUDO systemctl disable --now prometheus || true
fi
command -v prometheus >/dev/null && command -v promtool >/dev/null
