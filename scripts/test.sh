#!/usr/bin/env bash
# Builds and runs every test: the release build (warnings are errors), then the same suite under
# AddressSanitizer + UndefinedBehaviorSanitizer, then the threading tests under ThreadSanitizer
# (that preset builds only them), then a short fixed run of the libFuzzer targets (clang-19, ASan +
# UBSan). `scripts/test.sh release` runs only the first.
set -euo pipefail
cd "$(dirname "$0")/.."
presets=("$@")
((${#presets[@]})) || presets=(release asan tsan fuzz)
for preset in "${presets[@]}"; do
  if [ "$preset" = fuzz ]; then  # the libFuzzer targets, a short fixed run (scripts/fuzz_inputs.sh)
    echo "== fuzz: libFuzzer targets"
    scripts/fuzz_inputs.sh ci
    continue
  fi
  scripts/build.sh "$preset"  # says "== building $preset" on stderr
  echo "== $preset: test"
  ctest --preset "$preset" -j2
done
