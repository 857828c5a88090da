#!/usr/bin/env bash
# Builds and runs every test: the release build (warnings are errors), then the same suite under
# AddressSanitizer + UndefinedBehaviorSanitizer, then the threading tests under ThreadSanitizer
# (that preset builds only them). `scripts/test.sh release` runs only the first.
set -euo pipefail
cd "$(dirname "$0")/.."
presets=("$@")
((${#presets[@]})) || presets=(release asan tsan)
for preset in "${presets[@]}"; do
  scripts/build.sh "$preset"  # says "== building $preset" on stderr
  echo "== $preset: test"
  ctest --preset "$preset" -j2
done
