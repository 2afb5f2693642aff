"""The Python benchmark scripts run on the CPU and print their tables: the
GPU benchmark (it must work when a GPU is lent), the operator against
torch.nn.LayerNorm, the accuracy at a common offset, the gated norm against
transformers' classes, and each experiment family's benchmark of `pln`.
Their timings are not asserted.

Run by CTest (`python_bench_scripts`) with the interpreter whose torch the
build links, PLN_LIBRARY (the built library) and, where the command line is
built, PLN_CLI.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(script, *args):
    """Runs bench/`script` args... with this interpreter; returns its output (it must exit 0)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), OMP_NUM_THREADS="2")
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stdout
    return done.stdout


def test_the_gpu_benchmark_runs_on_the_cpu():
    out = run("bench_cuda.py", "--device", "cpu", "--quick", "--no-compile")
    assert re.search(r"NCHW \[[0-9, ]+\] g=16 \| bfloat16 \| [0-9]+ \| fwd\+bwd", out), out


def test_the_operator_benchmark_times_each_shape():
    assert "NCHW" in run("bench_python.py", "--quick")


def test_the_accuracy_benchmark_reaches_an_offset_of_ten_thousand():
    out = run("accuracy_offset.py")
    assert re.search(r"NCHW \[8,32,16,16\] g=8 +10000 \|", out), out


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                    reason="transformers is not installed for this interpreter (pip's torch build: scripts/venv)")
def test_the_gated_benchmark_compares_with_transformers():
    out = run("bench_gated.py", "--quick")
    assert re.search(r"qwen3next +bfloat16 +fwd\+bwd +[0-9.]+ +[0-9.]+ +[0-9.]+x", out), out


@pytest.mark.parametrize("family, row", [
    ("pinn", r"200 +[0-9.]+ +[0-9.]+ +[0-9.]+x"),  # a row per point count; the quick run's is 200
    ("fourier", r"[0-9.]+ +[0-9.]+ +[0-9.]+x"),
    ("cnn", r"[0-9.]+ +[0-9.]+ +[0-9.]+x"),
    ("vit", r"[0-9.]+ +[0-9.]+ +[0-9.]+x"),
])
def test_each_family_benchmark_times_the_command_line(family, row):
    if not os.environ.get("PLN_CLI"):
        pytest.skip("PLN_CLI names no `pln` (built without the experiments)")
    out = run(f"bench_{family}.py", "--quick", "--pln", os.environ["PLN_CLI"])
    assert re.search(row, out), out
