#!/usr/bin/env bash
# Installs the built project into a scratch prefix, then configures, builds
# and runs a consumer project that finds it with find_package(pln): a program
# using the C++ API (pln::pln) and a TorchScript runner (pln::ops) that loads
# a model scripted in Python. The installed Python package is imported too.
#   check.sh BUILD_DIR [PYTHON]
set -euo pipefail
build_dir=$1
python=${2:-/usr/bin/python3}
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
prefix_path="$work/prefix"
torch_cmake=$("$python" -c "import torch; print(torch.utils.cmake_prefix_path)" 2>/dev/null || true)
# The consumer finds the LibTorch pln was built against, as its users would.
case "$(grep -s '^Torch_DIR:' "$build_dir/CMakeCache.txt")" in
  *site-packages*) prefix_path="$prefix_path;$torch_cmake/../..;$torch_cmake" ;;
esac
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$source_dir/consumer" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix_path" "${launcher[@]}" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"

site=$(find "$work/prefix" -type d -path '*/dist-packages/pln' -printf '%h\n' | head -n 1)
# A model scripted in Python (the installed package), run by the C++ program.
# (TorchScript reads the module's source, so the script is a file.)
cat > "$work/script_model.py" <<'PY'
import sys
import torch
import pln

# The operators come from the library installed beside the package.
assert str(pln.library_path).startswith(sys.argv[2]), pln.library_path
model = torch.nn.Sequential(torch.nn.Linear(6, 16), pln.ParallelLN(16, 4, dim=2), torch.nn.Linear(16, 3))


class Check(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = model
        self.x = torch.randn(5, 6)
        self.expected = model(self.x).detach()

    @torch.jit.export
    def run(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)


torch.jit.script(Check()).save(sys.argv[1])
y = pln.ParallelLN(8, 4, dim=2)(torch.randn(3, 8))
assert y.reshape(3, 2, 4).mean(-1).abs().max() < 1e-5
print("installed Python package:", pln.__file__, "library:", pln.library_path)
PY
env -u PLN_LIBRARY PYTHONPATH="$site" "$python" "$work/script_model.py" "$work/scripted.pt" "$site"
"$work/build/run_scripted" "$work/scripted.pt"
