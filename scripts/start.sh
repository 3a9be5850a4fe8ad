#!/usr/bin/env bash
# One command: install what is needed, then serve the dashboard with the example dataset.
#   ./scripts/start.sh [--host H] [--port P] [--data-dir DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh base
exec calibdash serve "$@"
