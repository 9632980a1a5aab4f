#!/usr/bin/env bash
# Make a headless Chromium available (Debian's `chromium` package) for the dashboard tests
# (tests/ui, tests/e2e/test_operator_dashboard.py). Idempotent: does nothing when `chromium` is on
# PATH. When it cannot be installed (no root, no apt) it says so and exits 0: those tests then skip
# with the same advice, and everything else still runs.
set -uo pipefail

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-chromium.sh: need root (or sudo) to apt-get install chromium; the dashboard browser tests will skip" >&2
    exit 0
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium.sh: no apt-get; install Chromium yourself or the dashboard browser tests will skip" >&2
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y -q --no-install-recommends chromium >/dev/null; then
  $SUDO apt-get update -q >/dev/null
  $SUDO apt-get install -y -q --no-install-recommends chromium >/dev/null \
    || echo "install-chromium.sh: apt-get install chromium failed; the dashboard browser tests will skip" >&2
fi
exit 0
