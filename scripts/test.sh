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
source scripts/bootstrap.sh dev
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  echo "installing chromium and chromium-driver from Debian packages..."
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
exec python -m pytest "$@"
