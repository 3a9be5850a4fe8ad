#!/usr/bin/env bash
# Creates .venv (Python >= 3.11) and installs calibdash into it; sourced by start.sh and test.sh.
# Usage: source scripts/bootstrap.sh [extras]   e.g. "dev"
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="${CALIBDASH_VENV:-$ROOT/.venv}"
extras="${1:-}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "calibdash needs Python >= 3.11 (found: $("$PYTHON" --version 2>&1))" >&2; exit 1; }
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.installed-${extras:-base}"
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  target="$ROOT"
  [ -n "$extras" ] && target="$ROOT[$extras]"
  "$VENV/bin/python" -m pip install --quiet -e "$target"
  touch "$stamp"
fi
export PATH="$VENV/bin:$PATH"
