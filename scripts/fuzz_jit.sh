#!/usr/bin/env bash
# Runs the differential JIT fuzzers (the "JIT fuzz: ..." test cases of tests/jit/test_jit_fuzz*.cpp)
# over many fresh graphs:
#   scripts/fuzz_jit.sh [GRAPHS [SEED]]
# runs GRAPHS graphs (default 10000) of each fuzzer, graph i from seed SEED + i (default SEED: the
# time), CHUNK graphs (default 500) per test process, so that a crash loses one chunk only; the
# seeds of a crashed chunk are then run one at a time to name the crashing ones. Prints the seeds
# run, each failure (its seed and first line) and the failing seeds; exits 1 when any failed.
# A failure repeats with SGRAPH_FUZZ_SEED=<seed> SGRAPH_FUZZ_GRAPHS=1 sgraph_tests -tc='<case>'.
# Environment: BUILD (default build/release, built with --target sgraph_tests), CHUNK,
# FUZZERS (a doctest test-case filter, default "JIT fuzz*"), LOG_DIR (default a new temp dir).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
graphs="${1:-10000}"
seed="${2:-$(date +%s)}"
chunk="${CHUNK:-500}"
bin="${BUILD:-build/release}/tests/sgraph_tests"
filter="${FUZZERS:-JIT fuzz*}"
logs="${LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/sgraph_fuzz.XXXXXX")}"
mkdir -p "$logs"
if [ ! -x "$bin" ]; then
  echo "fuzz_jit: $bin is not built (cmake --build --preset release --target sgraph_tests)" >&2
  exit 2
fi
mapfile -t cases < <("$bin" --list-test-cases -tc="$filter" --no-version | grep -v '^\[doctest\]' |
                     grep -v '^=*$' | sed 's/^ *//')
if ((${#cases[@]} == 0)); then
  echo "fuzz_jit: no test case matches '$filter'" >&2
  exit 2
fi
# A test case's name as a doctest filter (',' separates filters unless escaped).
pattern() { printf '%s' "$1" | sed 's/,/\\,/g'; }

echo "fuzz_jit: $graphs graphs of each of ${#cases[@]} fuzzers from seed $seed; logs in $logs"
start=$(date +%s)
failures="$logs/failures.txt"
: >"$failures"
for c in "${cases[@]}"; do
  echo "== $c"
  for ((first = 0; first < graphs; first += chunk)); do
    n=$((graphs - first < chunk ? graphs - first : chunk))
    s=$((seed + first))
    log="$logs/$(printf '%s' "$c" | tr -c 'A-Za-z0-9' '_' | cut -c1-40)_$s.log"
    SGRAPH_FUZZ_SEED=$s SGRAPH_FUZZ_GRAPHS=$n "$bin" -tc="$(pattern "$c")" >"$log" 2>&1
    rc=$?
    summary=$(grep -o '[0-9]* graphs from seed .*' "$log" | cut -c1-320)
    echo "  seeds $s..$((s + n - 1)): ${summary:-no summary (exit $rc)}"
    if ! grep -q 'CRASHED' "$log" && ((rc < 128)); then
      found=$(grep -o 'FAILED seed [0-9]*.*' "$log" | cut -c1-220 | sed "s|^|$c: |")
      [ -n "$found" ] && printf '%s\n' "$found" >>"$failures"
      # A chunk that did not run through (the binary missing or replaced meanwhile, a doctest
      # failure outside the graphs) tested nothing: a failure too, never "no failures".
      if [ -z "$summary" ] || { ((rc != 0)) && [ -z "$found" ]; }; then
        echo "$c: seeds $s..$((s + n - 1)) did not run through (exit $rc; see $log)" >>"$failures"
      fi
      continue
    fi
    echo "  crashed: running its seeds one at a time"
    for ((k = s; k < s + n; ++k)); do
      SGRAPH_FUZZ_SEED=$k SGRAPH_FUZZ_GRAPHS=1 "$bin" -tc="$(pattern "$c")" >"$log.one" 2>&1
      one=$?
      grep -o 'FAILED seed [0-9]*.*' "$log.one" | cut -c1-220 | sed "s|^|$c: |" >>"$failures"
      if grep -q 'CRASHED' "$log.one" || ((one >= 128)); then
        echo "$c: FAILED seed $k: crashed (exit $one, see $log.$k)" >>"$failures"
        mv "$log.one" "$log.$k"
      fi
    done
    rm -f "$log.one"
  done
done

echo
echo "fuzz_jit: $graphs graphs of each fuzzer, seeds $seed..$((seed + graphs - 1)), in $(($(date +%s) - start)) s"
if [ ! -s "$failures" ]; then
  echo "no failures"
  exit 0
fi
echo "$(wc -l <"$failures") failures:"
cat "$failures"
echo "failing seeds: $(grep -o 'FAILED seed [0-9]*' "$failures" | awk '{print $3}' | sort -un | tr '\n' ' ')"
exit 1
