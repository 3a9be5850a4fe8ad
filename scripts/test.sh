#!/usr/bin/env bash
# One command: install what the tests need (Python packages; Chromium and ChromeDriver from
# Debian packages when missing), then run the whole suite, slow and browser tests included.
#   ./scripts/test.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
# Let Python cache the bytecode of what the tests import (CI machines set
# PYTHONDONTWRITEBYTECODE): the suite starts some 40 Python processes, and compiling the
# ~5,700 modules they import once costs less than compiling every module at install.
unset PYTHONDONTWRITEBYTECODE
# Chromium installs beside the Python packages (measured on a new machine: apt-get 12 s,
# the venv 9 s, 15 s side by side), and only with what it depends on: the ~90 packages it
# recommends (printing, Avahi, udev, Perl's web stack) are for a desktop, not a headless
# browser, and took 8 s more to unpack.
chromium_install=""
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  echo "installing chromium and chromium-driver from Debian packages..."
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
    sudo -v  # ask for a password here, not in the background
  fi
  chromium_log="$(mktemp)"
  { $SUDO apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      chromium chromium-driver; } >"$chromium_log" 2>&1 &
  chromium_install=$!
fi
source scripts/bootstrap.sh dev
if [ -n "$chromium_install" ]; then
  if ! wait "$chromium_install"; then
    cat "$chromium_log" >&2
    echo "test.sh: could not install chromium and chromium-driver (above)" >&2
    exit 1
  fi
  rm -f "$chromium_log"
fi
exec python -m pytest "$@"
