#!/bin/bash
# Under `make test-sanitize`: every experiment family end to end in the
# sanitized `pln` (one smoke grid per family, in worker processes, then
# plotted, packed and validated) and the demo. AddressSanitizer and UBSan
# abort the process on a finding, so a failing command here is a finding (or
# a plain failure: its log says which).
#   families.sh PLN DIR
set -euo pipefail
pln="$1"
dir="$2/sanitize_families"
rm -rf "$dir"
mkdir -p "$dir"

step() {
  local name="$1"
  shift
  if ! "$@" > "$dir/$name.log" 2>&1; then
    echo "FAILED: $*"
    tail -n 40 "$dir/$name.log"
    exit 1
  fi
  echo "ok: $name"
}

step demo "$pln" demo --steps 30 --widths 8 --threads 2 --out "$dir/demo"
for family in pinn fourier cnn vgg vit; do
  step "$family-grid" "$pln" grid "$family" --preset smoke --jobs 2 --threads 1 --out "$dir/$family"
  step "$family-plot" "$pln" plot "$dir/$family"
  step "$family-pack" "$pln" pack "$dir/$family" "$dir/$family-packed"
  step "$family-validate" "$pln" validate --skip-unit-tests --skip-smoke --check "$dir/$family-packed"
done
echo "every family ran clean under the sanitizers"
