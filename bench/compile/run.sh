#!/usr/bin/env bash
# What compiling costs, per model of ../shared/testdata, beside ONNX Runtime's session set-up:
#   bench/compile/run.sh [--threads N]
# For each model, `sgraph run` on its first data set (3 warm-up runs, then 1 compiled call, 1
# kernel thread unless --threads) three ways, each a fresh process:
#   - no disk cache: the regions' compile time (sum; wall time, regions compiling at once; median
#     and largest region), and the time from process start to the end of the first compiled call
#     (the process's wall time);
#   - cold disk cache (an empty directory): that time again, while it fills the cache;
#   - warm disk cache: that time with every kernel loaded from the cache, and the load time;
#   - the planned model (`sgraph export` on the model's data sets, kernels into the same cache),
#     with the warm cache: process start to the end of its first call, compiled (no warm-up run).
# ONNX Runtime: InferenceSession.create (all graph optimizations, 1 thread), median of 3 in one
# process after one to load the library (bench/compile/ort_create.js; onnxruntime-node as
# bench/compare/run.sh installs it into build/ort). Prints a Markdown table.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ORT_DIR=$ROOT/build/ort
threads=1
while (($#)); do
  case $1 in
    --threads) threads=$2; shift ;;
    *) echo "bench/compile: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
bench_setup compile
declare -A ort_ms
if [ -d "$ORT_DIR/node_modules/onnxruntime-node" ]; then
  onnx=()
  for d in "${models[@]}"; do onnx+=("$d/model.onnx"); done
  while read -r m ms; do ort_ms[$m]=$ms; done < <(node "$ROOT/bench/compile/ort_create.js" "$ORT_DIR" "${onnx[@]}")
fi

# Wall time of a command in ms.
wall_ms() {
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}

echo "| model | regions | ops compiled | compile ms, total | compile wall ms | median region ms | largest region ms | start to 1st compiled call, ms: no cache | cold cache | warm cache | planned model, warm cache | kernel load ms, warm | ORT session create ms |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for d in "${models[@]}"; do
  name=$(basename "$d")
  args=(run "$d/model.onnx" --warmup 3 --iters 4 --threads "$threads")
  first_data_set_inputs "$d"
  args+=("${inputs[@]}")
  rm -rf "$work/cache"
  nocache=$(wall_ms "$SGRAPH" "${args[@]}" --no-cache --json "$work/nocache.json")
  cold=$(wall_ms "$SGRAPH" "${args[@]}" --cache-dir "$work/cache")
  warm=$(wall_ms "$SGRAPH" "${args[@]}" --cache-dir "$work/cache" --json "$work/warm.json")
  "$SGRAPH" export "$d" -o "$work/planned.onnx" --threads "$threads" --cache-dir "$work/cache" >/dev/null
  planned=$(wall_ms "$SGRAPH" run "$work/planned.onnx" --iters 1 --threads "$threads" "${inputs[@]}" --cache-dir "$work/cache")
  "$PY" - "$work/nocache.json" "$work/warm.json" "$name" "$nocache" "$cold" "$warm" "$planned" "${ort_ms[$d/model.onnx]:--}" <<'PYEOF'
import json, statistics, sys
def regions(rep):
    out = list(rep["regions"])
    for sub in rep.get("subgraphs", []):
        out += regions(sub)
    return out
def wall(rep):  # compile_wall_ms of the Session and its subgraphs' Sessions
    return rep.get("compile_wall_ms", 0) + sum(wall(s) for s in rep.get("subgraphs", []))
nocache_rep = json.load(open(sys.argv[1]))
fresh = [r for r in regions(nocache_rep) if r["compiled"]]
loaded = [r for r in regions(json.load(open(sys.argv[2]))) if r["compiled"]]
ms = [r["compile_ms"] for r in fresh if not r["cache_hit"]]
name, nocache, cold, warm, planned, ort = sys.argv[3:9]
fmt = lambda v: f"{v:,.1f}"
print(f"| {name} | {len(fresh)} | {sum(len(r['nodes']) for r in fresh)} | "
      f"{fmt(sum(ms)) if ms else '0'} | {fmt(wall(nocache_rep))} | "
      f"{fmt(statistics.median(ms)) if ms else '-'} | "
      f"{fmt(max(ms)) if ms else '-'} | {nocache} | {cold} | {warm} | {planned} | "
      f"{fmt(sum(r['compile_ms'] for r in loaded if r['disk_hit']))} | {ort} |")
PYEOF
done
