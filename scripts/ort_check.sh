#!/usr/bin/env bash
# Runs ONNX Runtime on MODEL over DATADIR's test_data_set_*/input_*.pb and compares with their
# output_*.pb (rtol 1e-3, atol 1e-4 unless given): a line per data set, ok or MISMATCH with the
# largest absolute error; exit 1 on any mismatch or error.
#   scripts/ort_check.sh MODEL.onnx DATADIR [--rtol R] [--atol A]
# Installs onnxruntime-node into build/ort once (as bench/compare/run.sh does; needs npm and the
# npm registry). ORT_OPT sets ONNX Runtime's graph optimization level (default disabled).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ORT_DIR=${ORT_DIR:-$ROOT/build/ort}
ORT_VERSION=1.30.0

die() {
  echo "ort_check: $*" >&2
  exit 1
}
(($# >= 2)) || {
  sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
command -v node >/dev/null || die "needs Node.js (Debian: apt-get install nodejs npm)"
ort_ok() {
  node -e "const p = require('$ORT_DIR/node_modules/onnxruntime-node/package.json');
           if (p.version !== '$ORT_VERSION') process.exit(1);
           require('$ORT_DIR/node_modules/onnxruntime-node');" 2>/dev/null
}
if ! ort_ok; then
  command -v npm >/dev/null || die "needs npm to install onnxruntime-node (Debian: apt-get install npm)"
  echo "ort_check: installing onnxruntime-node@$ORT_VERSION into $ORT_DIR (about 290 MB)" >&2
  mkdir -p "$ORT_DIR"
  [ -f "$ORT_DIR/package.json" ] || echo '{"name": "sgraph-ort", "private": true}' >"$ORT_DIR/package.json"
  # Its install script would download a GPU add-on: skipped, the CPU binaries are in the package.
  ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$ORT_DIR" --no-audit --no-fund \
    --fetch-retries=1 --fetch-timeout=60000 "onnxruntime-node@$ORT_VERSION" >&2 ||
    die "npm install onnxruntime-node@$ORT_VERSION failed: is the npm registry reachable?"
  ort_ok || die "onnxruntime-node@$ORT_VERSION installed into $ORT_DIR but does not load"
fi
ORT_DIR=$ORT_DIR exec node "$ROOT/scripts/ort_check.js" "$@"
