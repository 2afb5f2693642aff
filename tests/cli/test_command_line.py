"""The `pln` command line, end to end: bad input refused with an error naming
the problem (and nothing written), short runs writing their records, `--help`
listing the key table, and grids emitting their cells. Each case parses what
the command printed or wrote and asserts on it.

Run by CTest (`cli_command_line`) with PLN_CLI, the `pln` to test, and
PLN_CLI_WORK, a directory the cases may fill.
"""

import json
import math
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

PLN = os.environ.get("PLN_CLI", "")
WORK = Path(os.environ.get("PLN_CLI_WORK", "/tmp/pln_cli_command_line"))

if not PLN:
    pytest.skip("PLN_CLI names no `pln` to test", allow_module_level=True)


def pln(*args, threads=None):
    """Runs `pln args...`; returns (exit code, stdout and stderr together)."""
    env = dict(os.environ)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    done = subprocess.run([PLN, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=env, timeout=600)
    return done.returncode, done.stdout


def fresh(name):
    path = WORK / name
    shutil.rmtree(path, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def refused(pattern, *args):
    """The command fails (not by a signal) with a line matching `pattern`; returns that line."""
    code, out = pln(*args)
    assert code != 0, f"exit 0 from pln {shlex.join(map(str, args))}:\n{out}"
    assert code < 128 and code >= 0, f"killed by signal {abs(code)}:\n{out}"
    lines = [line for line in out.splitlines() if re.search(pattern, line)]
    assert lines, f"no line matches {pattern!r}:\n{out}"
    return lines[0]


# ------------------------------------------------------------------ bad input

NO_GPU = r"device 'cuda(:[0-9]+)?': (this LibTorch .* was built without CUDA|no CUDA GPU is visible|only [0-9]+ CUDA GPU)"

ERRORS = {
    "demo_bad_width": (r"width \(10\) must be a positive multiple of group \(4\)", ["demo", "--widths", "10"]),
    "demo_reports_divergence": (r"^pln: demo: training of LN-Net \(width 8\) diverged at step [0-9]+",
                                ["demo", "--lr", "1e30", "--steps", "50", "--widths", "8"]),
    "demo_missing_gpu": (NO_GPU, ["demo", "--device", "cuda:8"]),
    "cnn_missing_gpu": (NO_GPU, ["cnn", "--preset", "smoke", "--set", "device=cuda:8", "--out", "{out}"]),
    "vit_amp_needs_cuda": (r"vit: amp=bf16 is autocast on CUDA; device is cpu",
                           ["vit", "--preset", "smoke", "--set", "amp=bf16", "--out", "{out}"]),
    "grid_missing_gpu": (NO_GPU, ["grid", "pinn", "--preset", "table-ours", "--device", "cuda:8", "--out", "{out}"]),
    "cnn_missing_cifar": (r"^pln: /nonexistent/data_batch_1\.bin: no such file",
                          ["cnn", "--preset", "smoke", "--set", "data=cifar10", "data_dir=/nonexistent", "--out", "{out}"]),
    "vgg_unknown_activation": (r"act must be one of none\|relu\|tanh\|sat\|silu, got 'swish'",
                               ["vgg", "--preset", "smoke", "--set", "act=swish", "--out", "{out}"]),
    "pinn_unknown_key": (r"^pln: pinn: unknown key 'widht'; known keys: problem, width",
                         ["pinn", "--preset", "smoke", "--set", "widht=3", "--out", "{out}"]),
    "pinn_deepxde_points_2d": (r"points=deepxde is defined for helmholtz1d only",
                               ["pinn", "--preset", "original", "--set", "problem=helmholtz2d", "--out", "{out}"]),
    "pinn_ours_boundary_count": (r"points=ours has the 2 ends as boundary points, got n_boundary=5",
                                 ["pinn", "--preset", "smoke", "--set", "n_boundary=5", "--out", "{out}"]),
    "vgg_bad_amp": (r"^pln: vgg: amp must be one of none\|bf16, got 'bogus'$",
                    ["vgg", "--preset", "smoke", "--set", "amp=bogus", "--out", "{out}"]),
    "vit_patch": (r"^pln: vit: patch 5 must divide the image size 28",
                  ["vit", "--preset", "smoke", "--set", "patch=5", "--out", "{out}"]),
    "vit_norm_site_twice": (r"^pln: vit: norm_sites names the site 'final' twice",
                            ["vit", "--preset", "smoke", "--set", "norm_sites=final:ln,final:pln", "--out", "{out}"]),
    "grid_out_newline": (r"^pln: --out holds a control character", ["grid", "pinn", "--preset", "smoke", "--out", "{out}\nline"]),
}


# Found only once the run has started (its config.json written): the data set.
AT_RUN_TIME = {"cnn_missing_cifar"}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_input_is_refused(name):
    pattern, args = ERRORS[name]
    out = fresh(f"refused/{name}")
    refused(pattern, *[a.replace("{out}", str(out)) for a in args])
    assert not (out / "summary.json").exists()
    if name not in AT_RUN_TIME:  # checked before the run's directory is made
        assert not (out / "config.json").exists()


# -------------------------------------------------------------- short runs

def summary_of(out):
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("family,metric", [("pinn", "rel_l2"), ("fourier", "rel_l2")])
def test_a_smoke_run_writes_its_records(family, metric):
    out = fresh(f"smoke/{family}")
    code, text = pln(family, "--preset", "smoke", "--threads", 2, "--out", out)
    assert code == 0, text
    assert f"wrote {out / 'summary.json'}" in text
    config, summary = json.loads((out / "config.json").read_text()), summary_of(out)
    assert config["experiment"] == family and config["preset"] == "smoke" and config["threads"] == 2
    assert summary["experiment"] == family
    assert math.isfinite(float(summary[metric])) and float(summary[metric]) >= 0


def test_demo_records_validate_and_plot():
    out = fresh("demo_records")
    code, text = pln("demo", "--steps", 30, "--widths", 8, "--threads", 2, "--out", out)
    assert code == 0, text
    assert f"wrote {out / 'summary.json'}" in text
    code, text = pln("validate", "--skip-unit-tests", "--skip-smoke", "--check", out)
    assert code == 0, text
    code, text = pln("plot", out)
    assert code == 0, text


# -------------------------------------------------------------------- help

def test_help_lists_the_key_table_and_the_presets():
    code, text = pln("vgg", "--help")
    assert code == 0, text
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.strip()}
    # name, type, default, what it allows, help
    assert rows["amp"][1:4] == ["text", "none", "none|bf16"], rows["amp"]
    assert "mixed precision" in " ".join(rows["amp"][4:])
    presets = [line.strip() for line in text.splitlines() if line.strip().startswith("smoke:")]
    assert presets and "n_train=128" in presets[0].split(), presets


# ------------------------------------------------------------------- grids

def emitted(family, preset, how, name):
    """`pln grid FAMILY --preset PRESET --emit HOW`: (the count of cells, their command lines, the grid's
    directory). `--emit slurm` writes commands.txt and prints the count; `--emit commands` prints the lines."""
    out = fresh(f"emit/{name}")
    code, text = pln("grid", family, "--preset", preset, "--emit", how, "--out", out)
    assert code == 0, text
    if how == "commands":
        commands = [shlex.split(line) for line in text.splitlines() if line.startswith(PLN + " ")]
        return len(commands), commands, out
    counts = re.findall(r"\(([0-9]+) pending cells\)", text)
    assert len(counts) == 1, text
    commands = [shlex.split(line) for line in (out / "commands.txt").read_text().splitlines() if line.strip()]
    return int(counts[0]), commands, out


def settings(command):
    """The `--set key=value` pairs of a cell's command line."""
    return dict(command[i + 1].split("=", 1) for i, word in enumerate(command) if word == "--set")


def option(command, name):
    return command[command.index(name) + 1]


@pytest.mark.parametrize("family,preset,how", [("vgg", "paper", "slurm"), ("pinn", "table-ours", "slurm"),
                                               ("pinn", "table-ours", "commands")])
def test_a_grid_emits_one_command_per_cell(family, preset, how):
    count, commands, out = emitted(family, preset, how, f"{family}_{preset}_{how}")
    assert count == len(commands) > 0
    outs = [option(c, "--out") for c in commands]
    assert len(set(outs)) == len(outs), "two cells share a directory"
    assert all(Path(o).parent == out for o in outs)
    assert len({json.dumps(settings(c), sort_keys=True) for c in commands}) == len(commands), "two cells alike"
    if how == "slurm":
        script = (out / "grid.slurm").read_text()
        assert f"--array=1-{count}" in script


def test_pinn_table_cells_hold_their_axes():
    _, commands, _ = emitted("pinn", "table-ours", "commands", "pinn_cells")
    cell = next(c for c in commands if Path(option(c, "--out")).name.startswith("0397_"))
    assert cell[1:4] == ["pinn", "--preset", "paper"]
    assert settings(cell) == {"norm": "pln", "group": "4", "act": "none", "width": "256", "depth": "3",
                              "bc_weight": "1", "optimizer": "adam", "lr": "0.001", "seed": "2"}
    assert Path(option(cell, "--out")).name == \
        "0397_model=PLN4_width=256_depth=3_bcweight=1_optimizer=adam_lr=0.001_seed=2"


def test_vit_grid_cells_resume():
    _, commands, _ = emitted("vit", "cpu", "commands", "vit_cells")
    assert all(c[-1] == "--resume" for c in commands)
    cell = next(c for c in commands if Path(option(c, "--out")).name == "20_group=C_seed=2")
    assert cell[1:4] == ["vit", "--preset", "cpu"] and settings(cell) == {"norm": "ln", "seed": "2"}
