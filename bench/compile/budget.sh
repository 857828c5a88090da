#!/usr/bin/env bash
# The compile budget's predictions (SessionOptions::compile_horizon) against what happens, per model
# of ../shared/testdata:
#   bench/compile/budget.sh [--iters N]
# For each model, `sgraph run` on its first data set (3 warm-up runs, then N calls, default 300;
# 1 kernel thread, no disk cache), each a fresh process, twice in turn:
#   - horizon 0: every region compiled when planned: the regions' compile ms, and the median call;
#   - horizon 1: every region the budget sees a saving in is deferred (none repays a compile in one
#     call), so the calls run interpreted: the median call, and the budget's predictions per region
#     (saving per call, compile ms), from the report.
# Prints, per model: predicted against measured saving per call (interpreted median - compiled
# median) and compile ms, and the calls a compile takes to repay, predicted and measured.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
iters=300
while (($#)); do
  case $1 in
    --iters) iters=$2; shift ;;
    *) echo "bench/compile/budget: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
bench_setup budget

echo "| model | regions | predicted saving, us/call | measured | predicted compile ms | measured | calls to repay, predicted | measured |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for d in "${models[@]}"; do
  name=$(basename "$d")
  first_data_set_inputs "$d"
  args=(run "$d/model.onnx" --warmup 3 --iters "$iters" --threads 1 --no-cache "${inputs[@]}")
  "$SGRAPH" "${args[@]}" --compile-horizon 0 --json "$work/c.json" --bench-json "$work/cb.json" >/dev/null
  "$SGRAPH" "${args[@]}" --compile-horizon 1 --json "$work/i.json" --bench-json "$work/ib.json" >/dev/null
  "$PY" - "$work" "$name" <<'PYEOF'
import json, re, sys
work, name = sys.argv[1:3]
def regions(rep):
    out = list(rep["regions"])
    for sub in rep.get("subgraphs", []):
        out += regions(sub)
    return out
compiled = json.load(open(f"{work}/c.json"))
deferred = json.load(open(f"{work}/i.json"))
c_ms = json.load(open(f"{work}/cb.json"))["median_ms"]
i_ms = json.load(open(f"{work}/ib.json"))["median_ms"]
saving_us = compile_ms = 0.0
n = 0
for r in regions(deferred):
    m = re.search(r"saves ~([0-9.e+-]+) us a call, compiling ~([0-9.e+-]+) ms", r["budget"])
    if m:
        n += 1
        saving_us += float(m.group(1))
        compile_ms += float(m.group(2))
measured_compile = sum(r["compile_ms"] for r in regions(compiled) if r["compiled"] and not r["cache_hit"])
measured_saving = (i_ms - c_ms) * 1e3
def calls(ms, us):
    return f"{ms * 1e3 / us:,.0f}" if us > 0 else "never"
print(f"| {name} | {n} | {saving_us:.2f} | {measured_saving:.2f} | {compile_ms:.1f} | "
      f"{measured_compile:.1f} | {calls(compile_ms, saving_us)} | {calls(measured_compile, measured_saving)} |")
PYEOF
done
