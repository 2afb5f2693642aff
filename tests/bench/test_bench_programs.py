"""The C++ benchmark programs run, print their tables, and refuse bad options
with an error naming the option (never a crash). Their timings are not
asserted: speed goals are met in the benchmark logs, not in tests.

Run by CTest (`bench_programs`) with PLN_BENCH_DIR, the build's bench/ folder.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

BENCH = Path(os.environ.get("PLN_BENCH_DIR", ""))

if not os.environ.get("PLN_BENCH_DIR"):
    pytest.skip("PLN_BENCH_DIR names no bench/ folder to test", allow_module_level=True)


def run(program, *args):
    """Runs bench/`program` args...; returns (exit code, stdout and stderr together)."""
    path = BENCH / program
    if not path.exists():
        pytest.skip(f"{program} is not built here")
    done = subprocess.run([str(path), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=600, env=dict(os.environ, OMP_NUM_THREADS="2"))
    return done.returncode, done.stdout


def table_rows(out, first_column):
    """The rows of a printed table whose first cell is `first_column`."""
    return [line for line in out.splitlines() if line.split() and line.split()[0] == first_column]


@pytest.mark.parametrize("program, args, pattern", [
    ("pln_bench", ["--quick", "--only", "LSTM"], r"no shape's name contains 'LSTM'"),
    ("pln_bench", ["--quick", "--threads", "1,0"], r"--threads: Value 0 not in range 1 to 4096"),
    ("pln_bench_kernels", ["--reps", "0"], r"--reps: Value 0 not in range"),
    ("pln_bench_groups", ["--quick", "--only", "nhwc"], r"--only: nhwc not in \{nc,nchw,few\}"),
    ("pln_bench_groups", ["--quick", "--groups", "8,7"], r"--groups 7: not a group size of the sweep \(1, 4,"),
    ("pln_bench_groups", ["--quick", "--csv", "/nonexistent/groups.csv"], r"cannot write '/nonexistent/groups.csv'"),
    ("pln_bench_pinn_step", ["--quick", "--group", "3"], r"width \(128\) must be a positive multiple of group \(3\)"),
    ("pln_bench_pinn_step", ["--quick", "--models", "pln4,gelu"], r"unknown model 'gelu' \(pln4, sat, tanh, relu"),
])
def test_a_bad_option_is_refused_naming_it(program, args, pattern):
    code, out = run(program, *args)
    assert 0 < code < 128, f"exit {code}:\n{out}"
    assert re.search(pattern, out), f"no line matches {pattern!r}:\n{out}"


def test_the_shapes_benchmark_times_every_shape_or_the_one_asked_for():
    code, out = run("pln_bench", "--quick", "--threads", "1")
    assert code == 0, out
    assert "NCHW" in out and "tokens" in out
    code, out = run("pln_bench", "--quick", "--threads", "1", "--only", "tokens")
    assert code == 0, out
    assert "tokens" in out
    assert "MLP" not in out and "NCHW" not in out


def test_the_kernels_benchmark_reports_each_layout_in_and_out_of_cache():
    code, out = run("pln_bench_kernels", "--reps", "1", "--threads", "1")
    assert code == 0, out
    assert re.search(r"NCHW .*\(L2\)", out), out


def test_the_groups_benchmark_sweeps_up_to_the_full_width():
    code, out = run("pln_bench_groups", "--quick", "--threads", "1")
    assert code == 0, out
    assert re.search(r"nchw +768 +768 ", out), out


def test_the_pinn_step_benchmark_has_a_row_of_timings_per_point_count():
    code, out = run("pln_bench_pinn_step", "--quick")
    assert code == 0, out
    assert re.search(r" 200 \| +[0-9.]+ +[0-9.]+ +[0-9.]+", out), out


def test_the_pinn_step_benchmark_times_each_model_and_with_before_the_composite_activation_jets():
    code, out = run("pln_bench_pinn_step", "--quick", "--before", "--width", "8,16", "--models", "pln4,tanh", "--cpu-time")
    assert code == 0, out
    assert "CPU time" in out, out
    # model width act-jets points | ... | step/prod in-step/prod jets/prod step/PLN(4)
    rows = [line.split() for line in out.splitlines() if re.match(r" *(PLN\(4\)|Tanh) ", line)]
    assert [(r[0], r[1], r[2]) for r in rows] == [("PLN(4)", "8", "-"), ("Tanh", "8", "fused"), ("Tanh", "8", "composite"),
                                                  ("PLN(4)", "16", "-"), ("Tanh", "16", "fused"),
                                                  ("Tanh", "16", "composite")], out
    # step/PLN(4) is the step's time over PLN(4)'s at the same width: 1.00 for
    # PLN(4), and for Tanh the ratio of the printed times (to 3 decimals) to
    # within their rounding and its own (to 2).
    pln_step = {r[1]: float(r[5]) for r in rows if r[0] == "PLN(4)"}
    for r in rows:
        step, to_pln, half = float(r[5]), float(r[-1]), 0.0005
        assert step > 0, out
        low = (step - half) / (pln_step[r[1]] + half)
        high = (step + half) / max(pln_step[r[1]] - half, 1e-300)
        assert low - 0.005 <= to_pln <= high + 0.005, f"{r}: step/PLN(4) {to_pln} is not {step} / {pln_step[r[1]]}"
        if r[0] == "PLN(4)":
            assert r[-1] == "1.00", out
