#!/bin/bash
# OpenBLAS's kernels: the core the CPU's instruction set supports (the one pln
# sets where OpenBLAS falls back to SSE kernels) gives the results the SSE
# kernels give, to rounding; a user's OPENBLAS_CORETYPE is kept, and where it
# is below the CPU the run's config.json and log say so. Skipped (77) where
# the BLAS is not OpenBLAS or the CPU has no AVX2.
set -euo pipefail
pln="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=/usr/bin/python3
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { [[ " $flags " == *" $1 "* ]]; }
if has avx512f && has avx512bw && has avx512vl && has avx512dq && has avx512cd; then
  core=SkylakeX tier=AVX-512
elif has avx2 && has fma; then
  core=Haswell tier=AVX2
else
  echo "skipped: this CPU has no AVX2"; exit 77
fi
run() {  # run NAME CORETYPE
  env OPENBLAS_CORETYPE="$2" "$pln" pinn --preset smoke --threads 1 --out "$work/$1" > "$work/$1.log" 2>&1 \
    || { cat "$work/$1.log"; exit 1; }
}
run sse Prescott
run cpu "$core"
"$python" - "$work" "$core" "$tier" <<'PY'
import json, sys
work, core, tier = sys.argv[1:]
sse, cpu = (json.load(open(f"{work}/{name}/config.json")) for name in ("sse", "cpu"))
if not sse["blas"].startswith("OpenBLAS"):
    print(f"skipped: the BLAS is {sse['blas']!r}")
    sys.exit(77)
if "Prescott" not in sse["blas"] or core not in cpu["blas"]:
    sys.exit(f"OPENBLAS_CORETYPE was not followed: {sse['blas']!r}, {cpu['blas']!r}")
note = sse.get("blas_note", "")
want = f"OpenBLAS runs its Prescott kernels (SSE), as OPENBLAS_CORETYPE=Prescott asks, on a {tier} CPU"
if want not in note:
    sys.exit(f"config.json's blas_note is {note!r}, expected it to say {want!r}")
if "blas_note" in cpu:
    sys.exit(f"a note where the kernels match the CPU: {cpu['blas_note']!r}")
if want not in open(f"{work}/sse.log").read():
    sys.exit("the run's log does not carry the note")
a, b = (json.load(open(f"{work}/{name}/summary.json")) for name in ("sse", "cpu"))
for metric in ("rel_l2", "final_loss"):
    if abs(a[metric] - b[metric]) > 1e-4 * abs(a[metric]):
        sys.exit(f"{metric}: {a[metric]!r} with SSE kernels, {b[metric]!r} with {core}'s")
print(f"{core}'s kernels give the SSE kernels' rel_l2 and final_loss to 1e-4; the user's Prescott is kept and noted")
PY
