#!/usr/bin/env bash
# The service under load (bench/README.md "Serving"): sgraph_serve on the bundled model on
# loopback, then four runs of SECONDS (default 60) with 16 connections, every response checked
# against the interpreter's output:
#   1. sgraph_load (C++ client), server warmed up on the model's data sets, shapes varying
#      (batch 1-4, seq 3-24: all guard hits of the dynamic kernel);
#   2. wrk with examples/service/wrk_check.lua, the same requests;
#   3. sgraph_load, a fresh server warmed up by its first requests at one shape (batch 2, seq 8:
#      static kernels), then after a tenth of the time other batch and seq sizes: guard misses, a
#      re-plan and a background compile happen under the load;
#   4. wrk, the same shifting run on a fresh server.
# Prints each run's figures and the server's RSS before and after (from /metrics).
#   scripts/load_test.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
scripts/build.sh release >&2
command -v wrk >/dev/null || { echo "load_test: wrk missing (scripts/deps.sh installs it)" >&2; exit 1; }
bin=build/release/examples
model=examples/models/tiny_encoder_block
port="${PORT:-8471}"
tmp=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

start_server() {  # args: extra sgraph_serve options
  "$bin/sgraph_serve" "$model/model.onnx" --port "$port" "$@" >"$tmp/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 200); do
    curl -sf "localhost:$port/healthz" >/dev/null 2>&1 && return
    sleep 0.1
  done
  cat "$tmp/server.log" >&2
  exit 1
}
stop_server() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""; }
metric() { curl -s "localhost:$port/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
rss() { echo "$(($(metric process_resident_memory_bytes) / 1048576)) MiB"; }

steady="batch=1,seq=3;batch=2,seq=8;batch=4,seq=24;batch=3,seq=17;batch=1,seq=12;batch=2,seq=5"
first="batch=2,seq=8"
shifted="batch=1,seq=5;batch=3,seq=13;batch=2,seq=11;batch=4,seq=20"
status=0

echo "== 1. sgraph_load, warmed up on $model's data sets, shapes varying, ${seconds} s"
start_server --warmup "$model"
"$bin/sgraph_load" "$model/model.onnx" --port "$port" --seconds "$seconds" --shapes "$steady" || status=1
"$bin/sgraph_load" "$model/model.onnx" --port "$port" --seconds "$seconds" --shapes "$steady" \
  --write-wrk "$tmp/steady.lua" >/dev/null
echo "== 2. wrk, the same requests, ${seconds} s (server RSS before: $(rss))"
SGRAPH_WRK_DATA="$tmp/steady.lua" wrk -t2 -c16 -d"${seconds}s" --timeout 10s \
  -s examples/service/wrk_check.lua "http://127.0.0.1:$port" || status=1
echo "server RSS after: $(rss); kernel calls $(metric sgraph_kernel_calls_total), guard misses $(metric sgraph_guard_misses_total)"
stop_server

echo "== 3. sgraph_load, warm-up by the first requests, shapes shifting after a tenth, ${seconds} s"
start_server
"$bin/sgraph_load" "$model/model.onnx" --port "$port" --seconds "$seconds" --shapes "$first" \
  --then "$shifted" --weights 1,9 || status=1
stop_server

echo "== 4. wrk, the same shifting run on a fresh server, ${seconds} s"
"$bin/sgraph_load" "$model/model.onnx" --port "$port" --seconds "$seconds" --shapes "$first" \
  --then "$shifted" --weights 1,9 --write-wrk "$tmp/shift.lua" >/dev/null
start_server
echo "server RSS before: $(rss)"
SGRAPH_WRK_DATA="$tmp/shift.lua" wrk -t2 -c16 -d"${seconds}s" --timeout 10s \
  -s examples/service/wrk_check.lua "http://127.0.0.1:$port" || status=1
echo "server RSS after: $(rss); re-plans $(metric sgraph_replans_total), kernels compiled $(metric sgraph_kernels_compiled_total), kernel calls $(metric sgraph_kernel_calls_total), guard misses $(metric sgraph_guard_misses_total)"
stop_server
exit $status
