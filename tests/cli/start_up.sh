#!/usr/bin/env bash
# start_up.sh PLN WORKDIR: `pln` starts at most twice (system/start_up.h). A run
# on two threads starts again with GOMP_SPINCOUNT=30000 (its second line says
# so, and libgomp itself reports it), unless the user set a wait policy, asked
# for one thread, or has one CPU; given the environment its first run started
# again with, a run starts once.
set -euo pipefail
pln=$1
work=$2/start_up
rm -rf "$work"
run() {  # run NAME THREADS [ENV SETTINGS OR WRAPPER...]: the run's output, libgomp's report included
  local name=$1 threads=$2
  shift 2
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_DISPLAY_ENV=verbose "$@" "$pln" pinn --preset smoke --set steps=2 \
    --threads "$threads" --out "$work/$name" 2>&1
}
expect() {  # expect WHAT PATTERN OUTPUT
  if ! grep -Eq -- "$2" <<<"$3"; then echo "FAIL: $1: no line matches '$2':"; echo "$3"; exit 1; fi
}
# What a run started again with, as its second line names it ("" when it started once).
started_with() { sed -n 's/.*, started again with \(.*\)$/\1/p' <<<"$1"; }

out=$(run two 2)
if (( $(nproc) >= 2 )); then
  expect "two threads, no setting" "OpenMP wait GOMP_SPINCOUNT=30000, started again with GOMP_SPINCOUNT=30000( |$)" "$out"
  expect "two threads: libgomp's reading" "GOMP_SPINCOUNT = '30000'" "$out"
else
  expect "two threads on one CPU" "OpenMP wait default, started (once|again with OPENBLAS_CORETYPE=[A-Za-z]+)$" "$out"
fi
read -r -a settings <<<"$(started_with "$out")"
out=$(run right 2 "${settings[@]}")
expect "the environment already right" "OpenMP wait (GOMP_SPINCOUNT=30000|default), started once$" "$out"

out=$(run user 2 OMP_WAIT_POLICY=ACTIVE)
expect "the user's policy" "OpenMP wait OMP_WAIT_POLICY=ACTIVE, started " "$out"

out=$(run one 1)
expect "one thread" "OpenMP wait default, started " "$out"
expect "one thread: libgomp's reading" "GOMP_SPINCOUNT = '300000'" "$out"

if command -v taskset > /dev/null; then
  out=$(run one_cpu 2 taskset -c 0)
  expect "one CPU" "OpenMP wait default, started " "$out"
fi
rm -rf "$work"
echo "start-up as expected"
