#!/usr/bin/env bash
# Creates .venv (Python >= 3.11) and installs calibdash into it; sourced by start.sh and test.sh.
# Usage: source scripts/bootstrap.sh base|dev
# The argument is required: `source` without arguments would hand the bootstrap the caller's
# own arguments (start.sh's --port ...), which pip would then read as extras.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="${CALIBDASH_VENV:-$ROOT/.venv}"
case "${1:-}" in
  base) extras="" ;;
  dev) extras="dev" ;;
  *) echo "bootstrap.sh: expected 'base' or 'dev', got '${1:-}'" >&2; return 2 2>/dev/null || exit 2 ;;
esac
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "calibdash needs Python >= 3.11 (found: $("$PYTHON" --version 2>&1))" >&2; exit 1; }
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.installed-${extras:-base}"
# The dev install includes the base one.
if [ -z "$extras" ] && [ -f "$VENV/.installed-dev" ] && [ "$VENV/.installed-dev" -nt "$ROOT/pyproject.toml" ]; then
  stamp="$VENV/.installed-dev"
fi
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
  target="$ROOT"
  [ -n "$extras" ] && target="$ROOT[$extras]"
  # uv resolves and installs the same packages as pip about three times faster (17 s
  # against 48 s for the dev install here); pip is the fallback wherever uv cannot be
  # installed or fails. Bytecode: Python caches a module's bytecode the first time it imports
  # it, which costs a fraction of compiling all 14,500 modules of the dev install (27 s of
  # CPU); but where PYTHONDONTWRITEBYTECODE is set (it is on the CI machines) it caches
  # nothing, and every process would parse every module again (`import app.main` 6.4 s,
  # not 2.8 s), so there everything is compiled at install, as pip does by default.
  compile=(--no-compile)
  uv_compile=()
  if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then
    compile=()
    uv_compile=(--compile-bytecode)
  fi
  if ! { "$VENV/bin/python" -m pip install --quiet uv &&
         "$VENV/bin/uv" pip install --quiet "${uv_compile[@]}" --python "$VENV/bin/python" \
           -e "$target"; }; then
    echo "bootstrap.sh: uv unavailable; installing with pip" >&2
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet "${compile[@]}" -e "$target"
  fi
  touch "$stamp"
  if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then
    touch "$VENV/.bytecode"
  else  # packages installed now have no bytecode yet
    rm -f "$VENV/.bytecode"
  fi
fi
# A venv installed where Python caches bytecode itself, now used where it does not.
if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ] && [ ! -f "$VENV/.bytecode" ]; then
  "$VENV/bin/python" -m compileall -q -j 0 \
    "$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
    >/dev/null || true
  touch "$VENV/.bytecode"
fi
export PATH="$VENV/bin:$PATH"
