#!/usr/bin/env bash
# The main job: build, then run the sgraph tool on the bundled example model. The build's progress
# goes to stderr, so stdout is the demo's output alone.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh release >&2
exec build/release/tools/sgraph demo "$@"
