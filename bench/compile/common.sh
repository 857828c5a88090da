# What bench/compile/run.sh and bench/compile/budget.sh share (sourced, not run): the paths, the
# models of ../shared/testdata, each model's first data set as `sgraph run` inputs, a work
# directory removed on exit.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SHARED=${SGRAPH_SHARED_DIR:-$ROOT/../shared}
SGRAPH=$ROOT/build/release/tools/sgraph
PY=/usr/bin/python3

# Checks the tool is built, makes $work (removed on exit) and fills `models` with the folders
# holding a model.onnx. $1: the script's name for messages and the work directory.
bench_setup() {
  [ -x "$SGRAPH" ] || { echo "bench/compile/$1: build the release preset first" >&2; exit 2; }
  work=$(mktemp -d "${TMPDIR:-/tmp}/sgraph_$1.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  models=()
  local d
  for d in "$SHARED"/testdata/real/* "$SHARED"/testdata/synthetic/*; do
    [ -f "$d/model.onnx" ] && models+=("$d")
  done
}

# Sets `inputs` to the `--input NAME=FILE` arguments giving model folder $1's inputs from its
# first data set (in the model's input order).
first_data_set_inputs() {
  inputs=()
  local i=0 n
  for n in $("$SGRAPH" info "$1/model.onnx" | awk '/^inputs/{a=1;next} /^outputs/{a=0} a{print $1}'); do
    inputs+=(--input "$n=$1/test_data_set_0/input_$i.pb")
    i=$((i + 1))
  done
}
