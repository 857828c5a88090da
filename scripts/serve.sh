#!/usr/bin/env bash
# The inference service on the bundled model: builds, then runs examples/service's sgraph_serve on
# examples/models/tiny_encoder_block, warmed up on its five data sets, on 127.0.0.1:8000 (or
# $PORT) until Ctrl-C. Other arguments go to sgraph_serve (e.g. --port 9000 --kernel-threads 1).
#   curl -s localhost:8000/v1/models/tiny_encoder_block
#   curl -s localhost:8000/metrics
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh release >&2
model=examples/models/tiny_encoder_block
exec build/release/examples/sgraph_serve "$model/model.onnx" --warmup "$model" \
  --port "${PORT:-8000}" "$@"
