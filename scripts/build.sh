#!/usr/bin/env bash
# Installs missing dependencies, then configures and builds one CMake preset (default: release).
# Talks on stderr: a line per stage, then Ninja's [n/N] progress (one updating line on a terminal,
# a line per 5% otherwise). The full configure and build output goes to build/<preset>.log; when
# either fails, its end (from the first failed command) is printed and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
log="build/$preset.log"

say() { echo "== $*" >&2; }

# The log's end on stderr: from the first command Ninja reports FAILED (at most 200 lines), and at
# least the last 60 lines.
show_failure() {
  local total first start
  total=$(wc -l <"$log")
  first=$(grep -n -m1 '^FAILED: ' "$log" | cut -d: -f1 || true)
  start=$((total > 60 ? total - 59 : 1))
  if [ -n "$first" ] && ((first < start)); then start=$first; fi
  if ((total - start >= 200)); then start=$((total - 199)); fi
  echo "---- $log, from line $start of $total ----" >&2
  tail -n "+$start" "$log" >&2
  echo "---- $1 failed; the full log is $log ----" >&2
}

# Copies the build's output to the log and shows its [n/N] lines.
progress() {
  local tty=0 cols=80 next=0 shown=0 line n total last=0 pct
  if [ -t 2 ]; then
    tty=1
    cols=$(tput cols 2>/dev/null || echo 80)
  fi
  while IFS= read -r line; do
    printf '%s\n' "$line" >&3
    [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]] || continue
    n=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
    if ((total != last)); then next=0 last=$total; fi  # a re-run of CMake, then the build
    if ((tty)); then
      printf '\r\033[K%s' "${line:0:cols-1}" >&2
      shown=1
    else
      pct=$((100 * n / total))
      if ((pct >= next || n == total)); then
        printf '%3d%% %s\n' "$pct" "${line:0:120}" >&2
        next=$(((pct / 5 + 1) * 5))
      fi
    fi
  done
  if ((shown)); then printf '\n' >&2; fi
}

say "installing dependencies"
scripts/deps.sh >&2
mkdir -p build
say "configuring $preset (log: $log)"
if ! cmake --preset "$preset" >"$log" 2>&1; then
  show_failure "configuring $preset"
  exit 1
fi
say "building $preset (cold, on 2 cores: release ~12 min, ASan ~9, TSan ~4, fuzz ~9)"
exec 3>>"$log"
set +e
cmake --build --preset "$preset" 2>&1 | progress
status=${PIPESTATUS[0]}
set -e
exec 3>&-
if ((status != 0)); then
  show_failure "building $preset"
  exit "$status"
fi
say "built $preset"
