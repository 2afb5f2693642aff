"""The Python benchmark scripts run on the CPU and print their tables: the
GPU benchmark (it must work when a GPU is lent), the operator against
torch.nn.LayerNorm, the package against torch.compile of the reference module
in every dtype, the accuracy at a common offset, the gated norm against
transformers' classes, and each experiment family's benchmark of `pln`.
Their timings are not asserted.

Run by CTest (`python_bench_scripts`) with the interpreter whose torch the
build links, PLN_LIBRARY (the built library) and, where the command line is
built, PLN_CLI.
"""

import importlib.util
import math
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


# The compile benchmark's bound on pln's error (max |y - ref| / max |ref| against float64): about
# two roundings of the dtype, which the composite path's half-type intermediates exceed.
COMPILE_ERROR_BOUND = {"float32": 1e-5, "bfloat16": 2 ** -7, "float16": 2 ** -10}


def test_the_compile_benchmark_tables_every_cell(tmp_path):
    log = tmp_path / "compile.md"
    out = run("bench_compile.py", "--quick", "--shapes", "pls,nchw", "--dtypes", "float32,bfloat16,float16",
              "--threads", "1,2", "--out", str(log))
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in out.splitlines() if line.startswith("| `[")]
    cells = {(row[0].split("` ", 1)[1], row[1], row[2]) for row in rows}  # the op's name after the shape
    assert {(op, dtype, threads) for op in ("PLS g = 4096 (Llama's RMSNorm)", "NCHW PLN g = 16")
            for dtype in ("float32", "bfloat16", "float16") for threads in ("1", "2")} == cells, out
    import torch
    compiled = hasattr(torch, "compile")
    for row in rows:
        ratios = row[3:10] if compiled else row[3:5] + row[7:10]  # without torch.compile its columns are n/a
        assert all(math.isfinite(float(r)) and float(r) > 0 for r in ratios), row
        error = re.fullmatch(r"([0-9.e+-]+)(?: \(([0-9.e+-]+)\))?", row[10])
        assert error and float(error.group(1)) < COMPILE_ERROR_BOUND[row[1]], row
        assert (error.group(2) is not None) == compiled, row
        if compiled:
            assert float(error.group(2)) < COMPILE_ERROR_BOUND[row[1]], row
    assert all(" | ".join(row) in log.read_text() for row in rows)
    assert re.search(r"goals met", log.read_text()), log.read_text()


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
