#!/usr/bin/env bash
# The main job: build, then run the sgraph tool on the bundled example model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh release >/dev/null
exec build/release/tools/sgraph demo "$@"
