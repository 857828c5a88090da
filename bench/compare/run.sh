#!/usr/bin/env bash
# sgraph against ONNX Runtime, one command:
#   bench/compare/run.sh [--quick] [--cycle] [--threads N] [--rounds R] [--target-ms T] [--only NAME]
# Installs onnxruntime-node into build/ort (once; needs npm and the npm registry), builds the
# release `sgraph` tool and the model generator, writes the generated models into
# build/compare/models, then runs every model of ../shared/testdata and the generated ones through
# both runtimes in alternating processes and prints a Markdown table (bench/README.md explains it).
# --quick: one round of short timed loops, a smoke run. --cycle: one row per model with several
# input shapes, each process serving all of them in turn. Exits 1 if any row fails or mismatches.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SHARED=${SGRAPH_SHARED_DIR:-$ROOT/../shared}
BUILD=$ROOT/build/release
ORT_DIR=$ROOT/build/ort
WORK=$ROOT/build/compare
ORT_VERSION=1.30.0

die() {
  echo "bench/compare: $*" >&2
  exit 1
}

args=()
while (($#)); do
  case $1 in
    --quick | --cycle) args+=("$1") ;;
    --threads | --rounds | --target-ms | --only)
      (($# >= 2)) || die "$1 needs a value"
      args+=("$1" "$2")
      shift
      ;;
    -h | --help)
      sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done

command -v node >/dev/null || die "needs Node.js to run ONNX Runtime (Debian: apt-get install nodejs npm)"
command -v npm >/dev/null || die "needs npm to install onnxruntime-node (Debian: apt-get install npm)"
[ -d "$SHARED/testdata/real" ] && [ -d "$SHARED/testdata/synthetic" ] ||
  die "test models missing: expected $SHARED/testdata/{real,synthetic} (set SGRAPH_SHARED_DIR)"

# 1. ONNX Runtime from npm, once. Its install script would download a GPU add-on: skip it.
ort_ok() {
  node -e "const p = require('$ORT_DIR/node_modules/onnxruntime-node/package.json');
           if (p.version !== '$ORT_VERSION') process.exit(1);
           require('$ORT_DIR/node_modules/onnxruntime-node');" 2>/dev/null
}
if ! ort_ok; then
  echo "bench/compare: installing onnxruntime-node@$ORT_VERSION into $ORT_DIR (about 290 MB)"
  mkdir -p "$ORT_DIR"
  [ -f "$ORT_DIR/package.json" ] || echo '{"name": "sgraph-bench-ort", "private": true}' >"$ORT_DIR/package.json"
  ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$ORT_DIR" --no-audit --no-fund \
    --fetch-retries=1 --fetch-timeout=60000 "onnxruntime-node@$ORT_VERSION" ||
    die "npm install onnxruntime-node@$ORT_VERSION failed: is the npm registry reachable? (the peer cannot be measured offline)"
  ort_ok || die "onnxruntime-node@$ORT_VERSION installed into $ORT_DIR but does not load"
fi

# 2. The release tool and the model generator (the preset's normal build tree).
cd "$ROOT"
[ -f "$BUILD/build.ninja" ] || cmake --preset release >/dev/null
mkdir -p "$WORK"
if ! cmake --build "$BUILD" -j2 --target sgraph_tool sgraph_compare_models >"$WORK/build.log" 2>&1; then
  grep -m 5 -E "error:|^FAILED:" "$WORK/build.log" >&2 || tail -n 5 "$WORK/build.log" >&2
  die "building sgraph failed (whole log: $WORK/build.log)"
fi

# A snapshot of the tool and its library, so a rebuild of build/release while the comparison runs
# (minutes) cannot swap them underneath it; its RUNPATH yields to LD_LIBRARY_PATH.
mkdir -p "$WORK/bin"
cp -L "$BUILD/tools/sgraph" "$BUILD/libsgraph.so.0" "$WORK/bin/"
export LD_LIBRARY_PATH=$WORK/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# 3. The generated models (4-layer 1024-wide MLP, the conv + transformer recognizer and its
#    variant with reshape shapes from Shape(x), the trivial baseline model), when missing or older
#    than their generator.
GEN=$BUILD/bench/compare/sgraph_compare_models
if [ ! -f "$WORK/models/recognizer_export/model.onnx" ] ||
  [ "$GEN" -nt "$WORK/models/recognizer_export/model.onnx" ]; then
  "$GEN" "$WORK/models" || die "generating models into $WORK/models failed"
fi

# 4. Both runtimes, alternating.
models=("$SHARED"/testdata/synthetic/*/ "$SHARED"/testdata/real/*/ "$WORK/models/mlp4x1024" "$WORK/models/recognizer"
  "$WORK/models/recognizer_export" "$WORK/models/trivial")
model_args=()
for m in "${models[@]}"; do model_args+=(--models "${m%/}"); done
ORT_VERSION=$ORT_VERSION exec node "$ROOT/bench/compare/compare.js" --sgraph "$WORK/bin/sgraph" \
  --ort-dir "$ORT_DIR" --work "$WORK" "${model_args[@]}" "${args[@]}"
