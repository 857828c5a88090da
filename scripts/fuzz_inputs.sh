#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (preset `fuzz`: clang-19, ASan + UBSan) for SECONDS each:
#   scripts/fuzz_inputs.sh [SECONDS [TARGET...]]      (default 60 s, all three targets)
#   scripts/fuzz_inputs.sh ci                         (CI: a fixed run, the same every time:
#                                                      seed 1, 100000 inputs each, seeds-only corpus)
# Seed corpus: every .onnx model of ../shared/testdata and ONNX's node tests (Debian
# libonnx-testdata) for the model targets, their test data sets' .pb tensors for fuzz_tensor_pb.
# New inputs are kept in build/fuzz/corpus/<target>/ (so later runs go on from them); a crash,
# leak, timeout or sanitizer report leaves its input in build/fuzz/artifacts/ and fails the script.
# Prints per target the executions done and the corpus size.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
ci=0
if [ "$seconds" = ci ]; then ci=1; fi
targets=("$@")
((${#targets[@]})) || targets=(fuzz_onnx_load fuzz_tensor_pb fuzz_onnx_run)

scripts/build.sh fuzz
node_tests=/usr/share/libonnx-testdata/data/node
shared=../shared/testdata
seeds=build/fuzz/seeds
if [ ! -d "$seeds" ]; then
  mkdir -p "$seeds/models" "$seeds/tensors"
  i=0
  while IFS= read -r f; do cp "$f" "$seeds/models/$((i++)).onnx"; done < <(
    find "$node_tests" "$shared" -name '*.onnx' -size -256k 2>/dev/null | sort)
  i=0
  while IFS= read -r f; do cp "$f" "$seeds/tensors/$((i++)).pb"; done < <(
    find "$node_tests" "$shared" -name '*.pb' -size -64k 2>/dev/null | sort | awk 'NR % 4 == 1')
fi
mkdir -p build/fuzz/artifacts
status=0
for t in "${targets[@]}"; do
  seed="$seeds/models"
  [ "$t" = fuzz_tensor_pb ] && seed="$seeds/tensors"
  corpus="build/fuzz/corpus/$t"
  limit=(-max_total_time="$seconds")
  if ((ci)); then  # a fresh corpus each time, so the run depends on nothing but the seeds
    corpus="build/fuzz/ci_corpus/$t"
    rm -rf "$corpus"
    limit=(-seed=1 -runs=100000)
  fi
  mkdir -p "$corpus"
  log="build/fuzz/$t.log"
  # -rss_limit_mb: a model may legitimately ask for more memory than that; the loader's limits
  # keep one input far below it. -timeout: one input taking longer is a hang.
  if ! "build/fuzz/fuzz/$t" "$corpus" "$seed" "${limit[@]}" -timeout=20 \
      -rss_limit_mb=4096 -max_len=262144 -print_final_stats=1 \
      -artifact_prefix=build/fuzz/artifacts/"$t"- >"$log" 2>&1; then
    status=1
    echo "$t: FAILED (see $log; input in build/fuzz/artifacts/)" >&2
    grep -m5 -E "ERROR|runtime error|SUMMARY" "$log" >&2 || true
  fi
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  echo "$t: $runs executions, corpus $(ls "$corpus" | wc -l) inputs"
done
exit $status
