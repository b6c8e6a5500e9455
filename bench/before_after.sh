#!/bin/bash
# Times the command line's workloads alternately with two source trees (e.g. git worktrees of two
# commits), so that both see the same machine load: each workload runs before, after, before, after…
#
#   git worktree add /tmp/before <commit> && git worktree add /tmp/after HEAD
#   bench/before_after.sh /tmp/before /tmp/after [REPEATS]
#
# Prints, per workload, the seconds of every run of each tree ("!" marks a failed run). The Python
# is $PYTHON, else this checkout's .venv; each tree's rdpcalc comes first on PYTHONPATH.
set -u
BEFORE=$(cd "$1" && pwd); AFTER=$(cd "$2" && pwd); REPEATS=${3:-2}
PY=${PYTHON:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python}
cd "${TMPDIR:-/tmp}"

seconds() {  # the seconds of one run of a command with the code of tree $1, "!" if it failed
  local tree=$1; shift
  local start end
  start=$(date +%s.%N)
  if PYTHONPATH=$tree timeout 600 "$@" >/dev/null 2>&1; then end=$(date +%s.%N); mark=""; else end=$(date +%s.%N); mark="!"; fi
  printf "%.3f%s" "$(echo "$end - $start" | bc -l)" "$mark"
}

workload() {  # label, repeats, command…
  local label=$1 repeats=$2; shift 2
  local before="" after=""
  for _ in $(seq "$repeats"); do
    before="$before $(seconds "$BEFORE" "$@")"
    after="$after $(seconds "$AFTER" "$@")"
  done
  printf "%s\tbefore:%s\tafter:%s\n" "$label" "$before" "$after"
}

RQM=(--c 1.5 --delta 1.5 --levels 16 --q 0.42)  # --delta: the spelling older trees read too
workload "rdpcalc --help" 10 "$PY" -m rdpcalc --help
workload "import rdpcalc" 10 "$PY" -c "import rdpcalc"
workload "divergence rqm n=40, α 2, 10, ∞" "$REPEATS" "$PY" -m rdpcalc divergence rqm "${RQM[@]}" --n 40 --alpha 2 --alpha 10 --alpha inf --json
workload "divergence pbm n=100" "$REPEATS" "$PY" -m rdpcalc divergence pbm --c 1 --theta 0.25 --trials 16 --n 100 --alpha 2 --json
workload "account rqm n=12, 30 rounds" "$REPEATS" "$PY" -m rdpcalc account rqm "${RQM[@]}" --n 12 --clients 100 --rounds 30 --json
workload "account pbm, 2000 rounds" "$REPEATS" "$PY" -m rdpcalc account pbm --c 1.5 --theta 0.25 --trials 16 --n 40 --clients 3400 --rounds 2000 --json
workload "mc rqm, 10⁶ draws" "$REPEATS" "$PY" -m rdpcalc mc rqm --c 1 --delta 1 --levels 16 --q 0.42 --x 0.3 --samples 1000000 --json
workload "bound ddg n=5" "$REPEATS" "$PY" -m rdpcalc bound ddg --c 1 --gamma 0.125 --sigma 1 --n 5 --json
