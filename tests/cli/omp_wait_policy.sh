#!/usr/bin/env bash
# omp_wait_policy.sh PLN WORKDIR: a run on two threads starts with
# GOMP_SPINCOUNT=30000 (its second line says so, and libgomp itself reports
# it), unless the user set a wait policy, asked for one thread, or has one CPU.
set -euo pipefail
pln=$1
work=$2/omp_wait_policy
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

out=$(run two 2)
if (( $(nproc) >= 2 )); then
  expect "two threads, no setting" "OpenMP wait GOMP_SPINCOUNT=30000$" "$out"
  expect "two threads: libgomp's reading" "GOMP_SPINCOUNT = '30000'" "$out"
else
  expect "two threads on one CPU" "OpenMP wait default$" "$out"
fi

out=$(run user 2 OMP_WAIT_POLICY=ACTIVE)
expect "the user's policy" "OpenMP wait OMP_WAIT_POLICY=ACTIVE$" "$out"

out=$(run one 1)
expect "one thread" "OpenMP wait default$" "$out"
expect "one thread: libgomp's reading" "GOMP_SPINCOUNT = '300000'" "$out"

if command -v taskset > /dev/null; then
  out=$(run one_cpu 2 taskset -c 0)
  expect "one CPU" "OpenMP wait default$" "$out"
fi
rm -rf "$work"
echo "wait policy as expected"
