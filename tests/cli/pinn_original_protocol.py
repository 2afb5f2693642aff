"""`pln pinn --preset original` against an independent computation.

A smoke cell at the authors' framework's protocol: its training points are
DeepXDE's (Hammersley interior points by the base-2 radical inverse, boundary
points drawn by numpy's legacy generator), its rate stays constant, and its
two errors (on the grid and on the training points, final and best logged)
are what numpy computes from the run's own solution files and logs, and so is
DeepXDE's best (the error at the logged step of lowest training loss, the
loss logged beside each error being the one the next step reports). Then a
two-seed grid at that protocol: its comparison table's best and mean +- sd are
the records'.

usage: pinn_original_protocol.py PLN WORKDIR
"""

import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np

PLN, WORK = sys.argv[1], sys.argv[2]
SEED, N_INTERIOR, N_BOUNDARY, STEPS, LR = 2, 300, 40, 30, 1e-4


def run(args):
    out = subprocess.run([PLN] + args, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"pln {' '.join(args)} failed ({out.returncode}):\n{out.stderr}")
    return out.stdout


def columns(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return {k: np.array([float(r[k]) if re.fullmatch(r"[-+0-9.eE]+|nan|inf", r[k]) else r[k] for r in rows])
            for k in rows[0]}


def radical_inverse(i):
    # The binary digits of i, reversed behind the point.
    return sum(int(d) / 2.0 ** (k + 1) for k, d in enumerate(reversed(bin(i)[2:])))


def relative_l2(u, exact):
    return np.linalg.norm(u - exact) / np.linalg.norm(exact)


def close(a, b, what, rtol=1e-12):
    if not math.isclose(a, b, rel_tol=rtol, abs_tol=0):
        sys.exit(f"{what}: pln gives {a!r}, numpy {b!r}")


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
cell = os.path.join(WORK, "cell")
run(["pinn", "--preset", "original", "--threads", "1", "--out", cell, "--set", "width=16", "depth=2",
     f"steps={STEPS}", f"n_interior={N_INTERIOR}", f"n_boundary={N_BOUNDARY}", f"seed={SEED}", "n_test=201"])

# The training points, in DeepXDE's order: the boundary points, then the
# residual points (the boundary points again, then the interior points).
np.random.seed(SEED)
ends = np.random.choice([-1.0, 1.0], N_BOUNDARY)
interior = np.array([2 * radical_inverse(i) - 1 for i in range(1, N_INTERIOR + 1)])
expected = np.concatenate([ends, ends, interior])
train = columns(os.path.join(cell, "solution_train.csv"))
if not np.array_equal(train["x"], expected):
    sys.exit(f"training points differ from DeepXDE's: first rows {train['x'][:6]} vs {expected[:6]}")
if not np.allclose(train["exact"], np.sin(np.pi * expected), rtol=0, atol=1e-15):
    sys.exit("the exact solution at the training points is not sin(pi x)")

# The rate is constant.
log = columns(os.path.join(cell, "train.csv"))
if len(log["lr"]) != STEPS or not np.all(log["lr"] == LR):
    sys.exit(f"the learning rate is not a constant {LR}: {sorted(set(log['lr']))}")

# Both errors, final and best logged.
summary = json.load(open(os.path.join(cell, "summary.json")))
grid = columns(os.path.join(cell, "solution.csv"))
close(summary["rel_l2"], relative_l2(grid["u"], grid["exact"]), "rel_l2 on the grid", rtol=1e-9)
close(summary["rel_l2_train"], relative_l2(train["u"], train["exact"]), "rel_l2_train on the training points", rtol=1e-9)
evals = columns(os.path.join(cell, "eval.csv"))
if list(evals["step"]) != list(range(0, STEPS + 1, 10)):
    sys.exit(f"errors are logged at steps {list(evals['step'])}, not every 10 from 0")
close(summary["rel_l2"], evals["rel_l2"][-1], "the last logged rel_l2")
close(summary["rel_l2_best"], evals["rel_l2"].min(), "rel_l2_best")
close(summary["rel_l2_train_best"], evals["rel_l2_train"].min(), "rel_l2_train_best")
if not summary["rel_l2_train_best"] < evals["rel_l2_train"][0]:
    sys.exit("training did not lower the error below its initial value: the check above proves little")

# DeepXDE's best: the loss logged with each error is the training loss at the
# same parameters, which the next step reports in train.csv before it moves them.
logged = evals["step"][:-1].astype(int)
next_step_loss = np.array([log["loss"][log["step"] == k + 1][0] for k in logged])
if not np.array_equal(evals["loss"][:-1], next_step_loss):
    sys.exit(f"eval.csv's losses {evals['loss'][:4]} are not the next steps' {next_step_loss[:4]}")
lowest = int(np.argmin(evals["loss"]))  # the first of equal ones, as DeepXDE's strict comparison keeps
close(summary["rel_l2_train_at_lowest_loss"], evals["rel_l2_train"][lowest], "rel_l2_train_at_lowest_loss")
close(summary["rel_l2_at_lowest_loss"], evals["rel_l2"][lowest], "rel_l2_at_lowest_loss")

# A grid at the protocol: comparison.md's best and mean +- sd over seeds.
grid_dir = os.path.join(WORK, "grid")
run(["grid", "pinn", "--preset", "smoke-original", "--out", grid_dir, "--jobs", "2", "--threads", "1"])
run(["plot", grid_dir])
records = columns(os.path.join(grid_dir, "records.csv"))
table = open(os.path.join(grid_dir, "comparison.md")).read()
def seed_cells(errors):
    return [f"{errors.min():.2e}", f"{errors.mean():.2e} +- {errors.std(ddof=1):.1e} ({len(errors)})"]


for model in ("PLN(4)", "Tanh"):
    row = next(line for line in table.splitlines() if line.startswith(f"| {model} | 16 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    for columns_at, metric in ((slice(3, 5), "rel_l2_train"), (slice(7, 9), "rel_l2_train_at_lowest_loss")):
        expected_cells = seed_cells(records[metric][records["model"] == model])
        if cells[columns_at] != expected_cells:
            sys.exit(f"comparison.md has {cells[columns_at]} for {model}'s {metric}, the records give {expected_cells}")
print("original protocol: DeepXDE's points, a constant rate, the errors (final, best logged, DeepXDE's best) and "
      "the seed statistics as numpy computes them")
