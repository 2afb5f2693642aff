#!/usr/bin/env bash
# The fused CUDA kernels are in the built library: every kernel family (the
# gated norm's and the activation jets' too) for every element type, as sm_90
# machine code (the same sources the CPU-run tests compile against HIP-CPU:
# tests/cuda/kernels_hip_cpu.cpp and its siblings).
# Usage: kernels_in_library.sh LIBPLN CUOBJDUMP (the CUDA toolkit's, or the one
# triton's wheel carries); skips (77) when CUOBJDUMP is empty or not there.
set -euo pipefail
lib=$1 cuobjdump=${2:-}
if [[ -z $cuobjdump || ! -x $cuobjdump ]]; then echo "SKIP: no cuobjdump found (CUDA toolkit or triton)"; exit 77; fi

elves=$("$cuobjdump" --list-elf "$lib")
grep -q "sm_90" <<<"$elves" || { echo "FAIL: no sm_90 code in $lib:"; echo "$elves"; exit 1; }
symbols=$("$cuobjdump" --dump-resource-usage "$lib" | grep -o '_ZN3pln4cuda[A-Za-z0-9_]*' | c++filt)
missing=0
expect() { grep -q "$1" <<<"$symbols" || { echo "FAIL: no $1...> in $lib"; missing=1; }; }
for kernel in rows_forward rows_backward large_group_forward large_group_backward strided_forward \
              strided_backward; do
  for type in float double __half __nv_bfloat16; do expect "${kernel}<${type},"; done
done
for kernel in gated_forward gated_backward gated_param_parts; do
  for type in float double __half __nv_bfloat16; do expect "${kernel}<${type},"; done
done
for accumulation in float double; do expect "param_finish<${accumulation}>"; done
for kernel in jet_forward jet_backward; do
  for act in Tanh Sat Relu Silu Sigmoid; do
    for type in float double; do expect "${kernel}<.*::${act}, ${type}>"; done
  done
done
[[ $missing == 0 ]] || exit 1
echo "fused CUDA kernels in $(basename "$lib"): $(wc -l <<<"$symbols") sm_90 functions ($cuobjdump)"
