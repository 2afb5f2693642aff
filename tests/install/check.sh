#!/usr/bin/env bash
# Installs the built project into a scratch prefix, then configures, builds
# and runs a consumer project that finds it with find_package(pln).
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$source_dir/consumer" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" "${launcher[@]}" >/dev/null
cmake --build "$work/build" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/build/consumer"

# The installed Python package finds the operator library installed beside it.
python=${PLN_PYTHON:-/usr/bin/python3}
if "$python" -c "import torch" 2>/dev/null; then
  site=$(find "$work/prefix" -type d -path '*/dist-packages/pln' -printf '%h\n' | head -n 1)
  env -u PLN_LIBRARY PYTHONPATH="$site" "$python" -c "
import torch, pln
y = pln.ParallelLN(8, 4, dim=2)(torch.randn(3, 8))
assert y.reshape(3, 2, 4).mean(-1).abs().max() < 1e-5
print('installed Python package:', pln.__file__)"
fi
