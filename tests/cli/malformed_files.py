"""Malformed files never crash a command and never lose records.

A finished smoke grid (and its packed copy, and a stopped run with its
checkpoint) is built once; then, seeded and bounded, one file at a time is
mutated (bytes flipped, truncated, a JSON field given another type or removed,
a CSV column dropped or a row given another field count) and every command
that reads it runs: `pln grid --status`, `pln grid` (which reruns what is not
finished), `pln plot`, `pln validate --check`, `pln pack`, `pln pinn --resume`.
Each outcome must be a success or exit status 1 with a one-line error that
names the mutated file; never a signal, an abort or another status. The
files of the cell that was not touched, and records made by the packed
folder, stay byte for byte as they were.

usage: python3 malformed_files.py PLN WORKDIR [--rounds N] [--seed S]
"""

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys


def run(argv, cwd=None):
    p = subprocess.run(argv, capture_output=True, text=True, errors="replace", cwd=cwd, timeout=300,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    return p.returncode, p.stdout, p.stderr


def must(argv):
    rc, out, err = run(argv)
    if rc != 0:
        sys.exit(f"setup command failed ({rc}): {' '.join(argv)}\n{out}{err}")


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def tree_digests(root):
    found = {}
    for base, _, files in os.walk(root):
        for name in files:
            path = os.path.join(base, name)
            found[os.path.relpath(path, root)] = digest(path)
    return found


# ------------------------------------------------------------ mutations ---

def flip_bytes(data, rng):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def truncate(data, rng):
    return data[:rng.randrange(len(data))] if data else data


def json_field(data, rng):
    try:
        doc = json.loads(data)
    except ValueError:
        return flip_bytes(data, rng)
    paths = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                paths.append(path + [k])
                walk(v, path + [k])
        elif isinstance(node, list):
            for i, v in enumerate(node):
                paths.append(path + [i])
                walk(v, path + [i])

    walk(doc, [])
    if not paths:
        return b"[]"
    path = rng.choice(paths)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if rng.random() < 0.3 and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = rng.choice([None, True, -1, 1e308, "text", [], {}, [1, "a"], {"k": 2}])
    return json.dumps(doc).encode()


def csv_shape(data, rng):
    lines = data.decode(errors="replace").split("\n")
    if len(lines) < 2:
        return flip_bytes(data, rng)
    choice = rng.randrange(3)
    if choice == 0:  # a column dropped from every line
        fields = lines[0].split(",")
        k = rng.randrange(len(fields))
        lines = [",".join(f for i, f in enumerate(l.split(",")) if i != k) if l else l for l in lines]
    elif choice == 1:  # one row with another field count
        i = rng.randrange(1, len(lines))
        lines[i] = lines[i] + ",extra" if rng.random() < 0.5 else ",".join(lines[i].split(",")[:-1])
    else:  # a number replaced by text
        i = rng.randrange(1, len(lines))
        fields = lines[i].split(",")
        if fields and fields[0]:
            fields[rng.randrange(len(fields))] = rng.choice(["abc", "", "1e999", "\"", "nan"])
        lines[i] = ",".join(fields)
    return "\n".join(lines).encode()


MUTATIONS = {".json": [flip_bytes, truncate, json_field, json_field],
             ".csv": [flip_bytes, truncate, csv_shape, csv_shape],
             ".safetensors": [flip_bytes, truncate]}


# ---------------------------------------------------------------- checks ---

def check_outcome(argv, rc, out, err, target):
    line = " ".join(argv)
    if rc == 0:
        return
    if rc != 1:
        sys.exit(f"FAIL: `{line}` ended with status {rc} on a mutated {target}:\n{out[-2000:]}{err[-2000:]}")
    # The error: its `pln:` line, and for `pln validate` the failures it lists.
    lines = err.strip().splitlines()
    starts = [i for i, l in enumerate(lines) if l.startswith("pln: ")]
    if not starts:
        sys.exit(f"FAIL: `{line}` failed without a `pln:` error line on a mutated {target}:\n{err[-2000:]}")
    message = "\n".join(lines[starts[0]:])
    name = os.path.basename(target)
    if name not in message:
        sys.exit(f"FAIL: `{line}`'s error does not name {name}:\n  {message}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pln")
    ap.add_argument("work")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    pln, work = args.pln, os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    pristine = os.path.join(work, "pristine")
    grid = os.path.join(pristine, "grid")
    must([pln, "grid", "pinn", "--preset", "smoke", "--out", grid, "--jobs", "1", "--threads", "1"])
    must([pln, "pack", grid, os.path.join(pristine, "packed")])
    # A run stopped with its checkpoint: killing a run is not reproducible, so
    # a finished run's checkpoint, its summary removed, stands in: --resume
    # must reject a mutated one by name.
    stopped = os.path.join(pristine, "stopped")
    must([pln, "vit", "--preset", "smoke", "--threads", "1", "--out", stopped])
    # Stopped: without its summary (a finished run's --resume reads nothing).
    os.remove(os.path.join(stopped, "summary.json"))
    cells = sorted(d for d in os.listdir(grid) if os.path.isdir(os.path.join(grid, d)))
    mutated_cell, kept_cell = cells[0], cells[1]

    targets = [
        ("grid/records.csv", ["status", "plot", "validate", "grid"]),
        ("grid/grid.json", ["status", "plot", "validate", "grid"]),
        (f"grid/{mutated_cell}/config.json", ["status", "plot", "validate", "grid", "pack"]),
        (f"grid/{mutated_cell}/summary.json", ["status", "plot", "validate", "grid", "pack"]),
        ("packed/provenance.json", ["validate_packed", "plot_packed"]),
        ("packed/records.csv", ["validate_packed", "plot_packed"]),
        ("packed/grid.json", ["validate_packed", "plot_packed"]),
    ]
    if os.path.exists(os.path.join(stopped, "checkpoint.safetensors")):
        targets.append(("stopped/checkpoint.safetensors", ["resume"]))
    rng = random.Random(args.seed)
    copy = os.path.join(work, "copy")
    runs = 0
    for target, commands in targets:
        for round_ in range(args.rounds):
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(pristine, copy)
            path = os.path.join(copy, target)
            if not os.path.exists(path):
                sys.exit(f"setup: {target} is not there")
            with open(path, "rb") as f:
                data = f.read()
            mutation = MUTATIONS[os.path.splitext(path)[1]][round_ % 4 if path.endswith(("json", "csv")) else round_ % 2]
            with open(path, "wb") as f:
                f.write(mutation(data, rng))
            g, packed = os.path.join(copy, "grid"), os.path.join(copy, "packed")
            kept_before = tree_digests(os.path.join(g, kept_cell))
            packed_before = {k: v for k, v in tree_digests(packed).items() if not k.endswith((".png", ".svg", ".md"))}
            argvs = {
                "status": [pln, "grid", "pinn", "--preset", "smoke", "--out", g, "--status"],
                "plot": [pln, "plot", g, "--out", os.path.join(copy, "figures")],
                "validate": [pln, "validate", "--skip-unit-tests", "--skip-smoke", "--check", g],
                "grid": [pln, "grid", "pinn", "--preset", "smoke", "--out", g, "--jobs", "1", "--threads", "1"],
                "pack": [pln, "pack", g, os.path.join(copy, "repacked")],
                "validate_packed": [pln, "validate", "--skip-unit-tests", "--skip-smoke", "--check", packed],
                "plot_packed": [pln, "plot", packed, "--out", os.path.join(copy, "packed_figures")],
                "resume": [pln, "vit", "--preset", "smoke", "--threads", "1", "--resume",
                           "--out", os.path.join(copy, "stopped")],
            }
            for command in commands:
                rc, out, err = run(argvs[command])
                runs += 1
                check_outcome(argvs[command], rc, out, err, path)
                after = tree_digests(os.path.join(g, kept_cell))
                for name in ("config.json", "summary.json"):
                    if kept_before.get(name) != after.get(name):
                        sys.exit(f"FAIL: `{' '.join(argvs[command])}` changed the untouched cell's {name} "
                                 f"(mutated: {target})")
                if command.endswith("_packed"):
                    now = {k: v for k, v in tree_digests(packed).items() if not k.endswith((".png", ".svg", ".md"))}
                    if now != packed_before:
                        sys.exit(f"FAIL: `{' '.join(argvs[command])}` changed the packed records (mutated: {target})")
    print(f"{runs} commands on {len(targets)} mutated files x {args.rounds} rounds: no crash, each error names its file, "
          "no record lost")


if __name__ == "__main__":
    main()
