#!/usr/bin/env bash
# One command: install what the tests need (Python packages; Chromium and ChromeDriver from
# Debian packages when missing), then run the whole suite, slow and browser tests included.
#   ./scripts/test.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh dev
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  echo "installing chromium and chromium-driver from Debian packages..."
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
# the project's own bytecode too: the suite starts many server processes, and where
# PYTHONDONTWRITEBYTECODE is set each would parse every module of it again (~0.3 s each)
python -m compileall -q -j 0 app calibcore calibdash benchmarks tests >/dev/null
exec python -m pytest "$@"
