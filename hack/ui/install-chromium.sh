#!/usr/bin/env bash
# Make a headless Chromium available (Debian's `chromium` package) for the dashboard tests
# (tests/ui, tests/e2e/test_operator_dashboard.py). Idempotent: does nothing when `chromium` is on
# PATH. When it cannot be installed (no root, no apt) it says so and exits 0: those tests then skip
# with the same advice, and everything else still runs.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/apt.sh"

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi

if ! apt_sudo; then
  echo "install-chromium.sh: need root (or sudo) to apt-get install chromium; the dashboard browser tests will skip" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium.sh: no apt-get; install Chromium yourself or the dashboard browser tests will skip" >&2
  exit 0
fi

apt_install chromium \
  || echo "install-chromium.sh: apt-get install chromium failed; the dashboard browser tests will skip" >&2
exit 0
