"""Records from anyone are safe to read, and run directories keep their results.

Attacks on `pln` through the files it reads and the directories it writes,
each with its exact outcome asserted: a success that ran and wrote nothing it
should not, or exit status 1 with a `pln:` error naming the file or key.
Never a command run from a record, a write outside the destination, a crash,
or a finished result lost. One part at a time (a CTest test each):

  plot     injection strings through every field that reaches a figure
  paths    traversal through every path-bearing field (records' cells)
  bombs    nesting, size and decompression bombs; sizes and thread counts
  owners   concurrent pack and demo, finished runs replaced, caches checked
  signals  a grid stopped by a signal to its own process stops its workers

usage: python3 untrusted_records.py PLN WORKDIR PART
"""

import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile

PLN = WORK = None
ENV = dict(os.environ, OMP_NUM_THREADS="1")


def run(argv, cwd=None, env=None, timeout=300):
    p = subprocess.run([PLN] + argv, capture_output=True, text=True, errors="replace", cwd=cwd,
                       env=env or ENV, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def must(argv, **kw):
    rc, out, err = run(argv, **kw)
    if rc != 0:
        sys.exit(f"setup failed ({rc}): pln {' '.join(argv)}\n{out[-3000:]}{err[-3000:]}")
    return out


def fail(what, rc=None, out="", err=""):
    sys.exit(f"FAIL: {what}" + (f" (exit {rc})" if rc is not None else "") + f"\n{out[-3000:]}{err[-3000:]}")


def refused(argv, *needles, status=1, **kw):
    """`pln argv` must exit `status` with a `pln:` line holding every needle."""
    rc, out, err = run(argv, **kw)
    lines = err.splitlines()
    first = next((i for i, l in enumerate(lines) if l.startswith("pln: ")), None)
    message = "\n".join(lines[first:]) if first is not None else ""
    if rc != status or first is None or not all(n in message for n in needles):
        fail(f"`pln {' '.join(argv)}` should be refused with {needles}", rc, out, err)
    return message


def tree(root, skip=()):
    found = {}
    for base, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.join(base, d) not in skip]
        for name in files:
            path = os.path.join(base, name)
            if path in skip or name.endswith(".lock"):
                continue
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return found


def read_csv(path):
    import csv
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def write_csv(path, header, rows):
    import csv
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def smoke_grid(dest):
    must(["grid", "pinn", "--preset", "smoke", "--out", dest, "--jobs", "1", "--threads", "1"])
    return dest


def cells_of(grid):
    return sorted(d for d in os.listdir(grid) if os.path.isdir(os.path.join(grid, d)))


# ------------------------------------------------------------------ plot ---

def part_plot():
    marker = os.path.join(WORK, "PWNED")
    payloads = [
        f'LN\nsystem("touch {marker}")\n# 64',
        f"a'\nsystem('touch {marker}')\n'",
        f"q\rsystem(\"touch {marker}\")\r",
        f"`touch {marker}`",
        f'x\\\' . system("touch {marker}") . \'',
        f"@x system(\"touch {marker}\") ; ! touch {marker}",
    ]
    attacks = 0

    def attack(argv, what):
        nonlocal attacks
        attacks += 1
        rc, out, err = run(argv, cwd=WORK)
        if os.path.exists(marker):
            fail(f"{what}: `pln {' '.join(argv)}` ran a command from a record", rc, out, err)
        if rc not in (0, 1) or (rc == 1 and not any(l.startswith("pln: ") for l in err.splitlines())):
            fail(f"{what}: `pln {' '.join(argv)}` ended badly", rc, out, err)
        for base, _, files in os.walk(os.path.join(WORK, "figures")):
            for name in files:
                if name.endswith(".gp"):
                    for line in open(os.path.join(base, name), errors="replace"):
                        if line.lstrip().startswith(("system", "!", "#")) and "touch" in line:
                            fail(f"{what}: {name} holds a command line: {line!r}")

    # A demo's fit.csv: its headers are the panels' titles and the curves' labels.
    demo = os.path.join(WORK, "demo")
    must(["demo", "--steps", "30", "--widths", "8", "--threads", "1", "--out", demo])
    header, rows = read_csv(os.path.join(demo, "fit.csv"))
    # Every payload through one column (a panel's title and its curves'
    # labels), the first through each of the others.
    for column in range(2, len(header)):
        for payload in payloads if column == 2 else payloads[:1]:
            shutil.rmtree(os.path.join(WORK, "figures"), ignore_errors=True)
            h = list(header)
            h[column] = payload + " 8"
            write_csv(os.path.join(demo, "fit.csv"), h, rows)
            attack(["plot", demo, "--out", os.path.join(WORK, "figures")], f"fit.csv header {column}")
    # A grid's records.csv: each text column (the labels come from them), the
    # numeric ones all at once, and every column's name; the cell's own
    # attack is in `paths`.
    grid = smoke_grid(os.path.join(WORK, "grid"))
    header, rows = read_csv(os.path.join(grid, "records.csv"))
    pristine = open(os.path.join(grid, "records.csv"), "rb").read()

    def numeric(column):
        try:
            [float(r[column]) for r in rows]
            return True
        except ValueError:
            return False

    texts = [c for c in range(1, len(header)) if not numeric(c)]
    for column in texts + [None]:
        for payload in (payloads if column is not None and header[column] in ("norm", "act", "model")
                        else payloads[:1]):
            changed = [column] if column is not None else [c for c in range(1, len(header)) if numeric(c)]
            shutil.rmtree(os.path.join(WORK, "figures"), ignore_errors=True)
            write_csv(os.path.join(grid, "records.csv"), header,
                      [[payload if i in changed else v for i, v in enumerate(r)] for r in rows])
            attack(["plot", grid, "--out", os.path.join(WORK, "figures")],
                   f"records.csv column {header[column] if column is not None else 'every number'}")
    write_csv(os.path.join(grid, "records.csv"), header, rows)
    h = list(header)
    h[-1] = payloads[0]
    write_csv(os.path.join(grid, "records.csv"), h, rows)
    attack(["plot", grid, "--out", os.path.join(WORK, "figures")], "records.csv column name")
    # validate --check names the crafted field.
    write_csv(os.path.join(grid, "records.csv"), header, [r[:2] + [payloads[0]] + r[3:] for r in rows])
    refused(["validate", "--skip-unit-tests", "--skip-smoke", "--check", grid], "records.csv",
            "holds a control character")
    with open(os.path.join(grid, "records.csv"), "wb") as f:
        f.write(pristine)
    print(f"plot: {attacks} crafted records plotted, no command run")


# ----------------------------------------------------------------- paths ---

def part_paths():
    grid = smoke_grid(os.path.join(WORK, "a", "grid"))
    header, rows = read_csv(os.path.join(grid, "records.csv"))
    outside = os.path.join(WORK, "outside")
    os.makedirs(outside)
    # What a crafted cell "../../src_evil" names, beside the grid: a whole
    # cell, so that a pack following it would read it and write beside DEST.
    shutil.copytree(os.path.join(grid, cells_of(grid)[0]), os.path.join(WORK, "src_evil"))
    before = tree(WORK, skip=(grid, outside))
    dest = os.path.join(WORK, "deep", "er", "dest")
    cell = header.index("cell")
    for bad, needle in [("../../src_evil", "climbs out"), ("../" + cells_of(grid)[0], "climbs out"),
                        (outside, "is absolute"), ("x/../../y", "climbs out")]:
        write_csv(os.path.join(grid, "records.csv"), header,
                  [r[:cell] + [bad] + r[cell + 1:] if i == 0 else r for i, r in enumerate(rows)])
        refused(["pack", grid, dest], "records.csv", needle)
        refused(["plot", grid, "--out", os.path.join(WORK, "figures")], "records.csv", needle)
    # A cell whose directory is a symbolic link out of the grid.
    write_csv(os.path.join(grid, "records.csv"), header, rows)
    first = os.path.join(grid, cells_of(grid)[0])
    shutil.copytree(first, os.path.join(outside, "cell"))
    shutil.rmtree(first)
    os.symlink(os.path.join(outside, "cell"), first)
    refused(["pack", grid, dest], "records.csv", "symbolic link")
    after = tree(WORK, skip=(grid, outside))
    written = sorted(set(after) - set(before))
    if written:
        fail(f"files written outside the destination: {written}")
    os.remove(first)
    shutil.copytree(os.path.join(outside, "cell"), first)
    # A records.csv saved with a byte-order mark still names its cells.
    data = open(os.path.join(grid, "records.csv"), "rb").read()
    with open(os.path.join(grid, "records.csv"), "wb") as f:
        f.write(b"\xef\xbb\xbf" + data)
    must(["pack", grid, dest])
    # A destination that is not an earlier pack is not replaced.
    mine = os.path.join(WORK, "mine")
    os.makedirs(mine)
    open(os.path.join(mine, "thesis.tex"), "w").write("precious\n")
    refused(["pack", grid, mine], "is not an earlier pack")
    if open(os.path.join(mine, "thesis.tex")).read() != "precious\n":
        fail("pack replaced a folder that was not a pack")
    refused(["pack", grid, grid], "is not an earlier pack")
    print("paths: traversal through records refused; nothing written outside")


# ----------------------------------------------------------------- bombs ---

def part_bombs():
    deep = "[" * 100000 + "]" * 100000
    grid = smoke_grid(os.path.join(WORK, "grid"))
    pristine = os.path.join(WORK, "pristine")
    shutil.copytree(grid, pristine)
    summary = os.path.join(grid, cells_of(grid)[0], "summary.json")
    open(summary, "w").write(deep)
    refused(["grid", "pinn", "--preset", "smoke", "--out", grid, "--jobs", "1", "--threads", "1"],
            "summary.json", "nested deeper than 64 levels")
    refused(["validate", "--skip-unit-tests", "--skip-smoke", "--check", grid], "summary.json", "nested deeper")
    shutil.rmtree(grid)
    shutil.copytree(pristine, grid)
    open(os.path.join(grid, "grid.json"), "w").write(deep)
    refused(["pack", grid, os.path.join(WORK, "packed")], "grid.json", "nested deeper")
    refused(["plot", grid, "--out", os.path.join(WORK, "figures")], "grid.json", "nested deeper")
    refused(["validate", "--skip-unit-tests", "--skip-smoke", "--check", grid], "grid.json", "nested deeper")

    # Sizes that drive allocations, refused before anything is written.
    out = os.path.join(WORK, "sized")
    refused(["fourier", "--preset", "smoke", "--set", "K=4611686018427387904", "--out", out], "fourier:", "K",
            "--max-elements")
    refused(["pinn", "--preset", "smoke", "--set", "n_interior=1000000000", "--out", out], "n_interior x width",
            "--max-elements")
    refused(["pinn", "--preset", "smoke", "--threads", "10000", "--out", out], "--threads must be in 0..")
    refused(["pinn", "--preset", "smoke", "--threads", "-1", "--out", out], "--threads must be in 0..")
    refused(["grid", "pinn", "--preset", "smoke", "--jobs", "100000", "--out", out], "--jobs 100000")
    if os.path.exists(out) and os.listdir(out):
        fail(f"a refused configuration wrote {os.listdir(out)}")

    # A gzip bomb as a data set's file.
    data = os.path.join(WORK, "cifar")
    os.makedirs(data)
    with gzip.open(os.path.join(data, "data_batch_1.bin"), "wb", compresslevel=1) as f:
        chunk = bytes(1 << 20)
        for _ in range(300):
            f.write(chunk)
    refused(["cnn", "--preset", "smoke", "--threads", "1", "--set", "data=cifar10", f"data_dir={data}",
             "--out", os.path.join(WORK, "bomb_run")], "data_batch_1.bin", "inflates to more than 256 MiB")

    # A checkpoint with a deflate bomb, and a FIFO in a checkpoint's place.
    stopped = os.path.join(WORK, "stopped")
    run_args = ["pinn", "--preset", "smoke", "--threads", "1", "--set", "checkpoint_every=10"]
    must(run_args + ["--out", stopped])
    os.remove(os.path.join(stopped, "summary.json"))  # as a run stopped after its checkpoint
    checkpoint = os.path.join(stopped, "checkpoint.pt")
    with zipfile.ZipFile(checkpoint) as z:
        entries = [(i, z.read(i)) for i in z.infolist()]
    # Its data.pkl deflated from 100 MiB: a few hundred KiB on disk.
    with zipfile.ZipFile(checkpoint, "w") as z:
        for info, content in entries:
            if info.filename.endswith("/data.pkl"):
                z.writestr(info.filename, bytes(100 << 20), compress_type=zipfile.ZIP_DEFLATED)
            else:
                z.writestr(info, content)
    if os.path.getsize(checkpoint) > 4 << 20:
        fail("the crafted checkpoint is not small")
    refused(run_args + ["--resume", "--out", stopped], "checkpoint.pt", "would inflate to more than 64 MiB")
    os.remove(checkpoint)
    os.mkfifo(checkpoint)
    refused(run_args + ["--resume", "--out", stopped], "checkpoint.pt", "not a regular file", timeout=120)
    print("bombs: nesting, sizes, threads and decompression refused by name")


# ---------------------------------------------------------------- owners ---

def start(argv, log):
    # SIGINT as a terminal's process would have it (a background job's is ignored).
    return subprocess.Popen([PLN] + argv, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=ENV,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def part_owners():
    grid = smoke_grid(os.path.join(WORK, "grid"))
    # Two packs into one destination at once take turns: both finish, and the
    # destination always holds one whole pack, nothing beside it.
    dest = os.path.join(WORK, "packs", "packed")
    for trial in range(6):
        packs = [start(["pack", grid, dest], os.path.join(WORK, f"pack{trial}_{i}.log")) for i in range(2)]
        codes = [p.wait(timeout=120) for p in packs]
        logs = [open(os.path.join(WORK, f"pack{trial}_{i}.log")).read() for i in range(2)]
        if codes != [0, 0]:
            fail(f"concurrent pack: exits {codes}", out="".join(logs))
        if os.listdir(os.path.dirname(dest)) != ["packed"]:
            fail(f"concurrent pack left {os.listdir(os.path.dirname(dest))} beside the destination")
        provenance = json.load(open(os.path.join(dest, "provenance.json")))
        for name in ["grid.json", "records.csv"] + provenance["figure_inputs"]:
            if not os.path.isfile(os.path.join(dest, name)):
                fail(f"concurrent pack: {name} missing from the destination")
    # The records of a grid short of its finished cells are rebuilt, not refused.
    header, rows = read_csv(os.path.join(grid, "records.csv"))
    write_csv(os.path.join(grid, "records.csv"), header, rows[:1])
    out = must(["pack", grid, dest])
    if "rebuilt" not in out or len(read_csv(os.path.join(dest, "records.csv"))[1]) != len(rows):
        fail("pack did not rebuild records.csv short of its finished cells", out=out)

    # Two demos into one directory at once: one runs, the other is refused.
    demo = os.path.join(WORK, "demo")
    demos = [start(["demo", "--steps", "400", "--widths", "8", "--threads", "1", "--seed", str(seed), "--out", demo],
                   os.path.join(WORK, f"demo{seed}.log")) for seed in (1, 2)]
    codes = [p.wait(timeout=300) for p in demos]
    logs = [open(os.path.join(WORK, f"demo{seed}.log")).read() for seed in (1, 2)]
    if sorted(codes) not in ([0, 1], [0, 75]):
        fail(f"two demos in one directory: exits {codes}", out="".join(logs))
    winner = (1, 2)[codes.index(0)]
    record = json.load(open(os.path.join(demo, "config.json")))
    if record["config"]["seed"] != winner or not os.path.exists(os.path.join(demo, "summary.json")):
        fail("two demos in one directory: config.json is not the finished demo's", out="".join(logs))

    # A finished run is not replaced by another family's or configuration's.
    finished = os.path.join(WORK, "finished")
    pinn = ["pinn", "--preset", "smoke", "--threads", "1"]
    must(pinn + ["--out", finished])
    kept = tree(finished)
    refused(["fourier", "--preset", "smoke", "--threads", "1", "--out", finished], "holds a finished run",
            "a pinn run, not fourier", "--force")
    refused(pinn + ["--set", "steps=41", "--out", finished], "holds a finished run", "steps=40 there")
    if tree(finished) != kept:
        fail("a refused run changed the finished run's files")
    # A temporary file a killed run left behind goes when the directory is next taken.
    open(os.path.join(finished, ".eval.csv.Ab3dEf"), "w").write("torn")
    out = must(pinn + ["--resume", "--out", finished])
    if "nothing to resume" not in out or tree(finished) != kept:
        fail(f"--resume of a finished run changed it: {sorted(tree(finished))}", out=out)
    # A replacement stopped midway leaves the finished run whole, set aside.
    p = start(pinn + ["--set", "steps=100000000", "--force", "--out", finished], os.path.join(WORK, "force.log"))
    for _ in range(1200):
        if os.path.exists(os.path.join(finished, "running.json")):
            break
        time.sleep(0.05)
    p.kill()
    p.wait()
    aside = os.path.join(finished, ".replaced")
    if tree(aside) != kept:
        fail("a replacement killed midway lost the finished run", out=open(os.path.join(WORK, "force.log")).read())
    if os.path.exists(os.path.join(finished, "summary.json")):
        fail("a directory being replaced looks finished")
    # --force replaces it whole: none of pinn's files stay beside fourier's.
    must(["fourier", "--preset", "smoke", "--threads", "1", "--force", "--out", finished])
    if os.path.exists(aside) or os.path.exists(os.path.join(finished, "ntk.csv")):
        fail(f"--force left the replaced run's files: {sorted(os.listdir(finished))}")
    if json.load(open(os.path.join(finished, "summary.json")))["experiment"] != "fourier":
        fail("--force did not leave the new run's summary")

    # The random-label cache is checked against its seed, and kept privately.
    cache = os.path.join(WORK, "cache")
    env = dict(ENV, XDG_CACHE_HOME=cache)
    cnn = ["cnn", "--preset", "smoke", "--threads", "1", "--set", "labels=random"]
    must(cnn + ["--out", os.path.join(WORK, "labels1")], env=env)
    stored = os.path.join(cache, "pln", "fashion-mnist-random-labels-seed0.bin")
    size = os.path.getsize(stored)
    open(stored, "wb").write(bytes(size))
    refused(cnn + ["--out", os.path.join(WORK, "labels2")], "random-labels-seed0.bin",
            "does not hold the random labels of label_seed 0", env=env)
    bare = {k: v for k, v in ENV.items() if k not in ("HOME", "XDG_CACHE_HOME")}
    refused(cnn + ["--out", os.path.join(WORK, "labels3")], "set labels_file", env=bare)
    refused(cnn + ["--set", "labels_file=/etc", "--out", os.path.join(WORK, "labels4")], "/etc",
            "not a regular file", env=env)
    # pln's own "nan" losses pass its schema check.
    nan = os.path.join(WORK, "nan")
    must(["cnn", "--preset", "smoke", "--threads", "1", "--set", "init_scale=1e308", "--out", nan])
    must(["validate", "--skip-unit-tests", "--skip-smoke", "--check", nan])
    print("owners: one writer per directory, finished runs kept, caches checked")


# --------------------------------------------------------------- signals ---

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def part_signals():
    grid = os.path.join(WORK, "grid")
    for sig in (signal.SIGTERM, signal.SIGINT):
        shutil.rmtree(grid, ignore_errors=True)
        # The pinn table grid's cells run long enough to be caught running.
        g = start(["grid", "pinn", "--preset", "table-ours", "--out", grid, "--jobs", "2", "--threads", "1"],
                  os.path.join(WORK, "grid.log"))
        markers = []
        for _ in range(1200):
            markers = [os.path.join(grid, c, "running.json") for c in (cells_of(grid) if os.path.isdir(grid) else [])]
            markers = [m for m in markers if os.path.exists(m)]
            if len(markers) == 2:
                break
            time.sleep(0.05)
        if len(markers) != 2:
            fail("the grid's workers never started", out=open(os.path.join(WORK, "grid.log")).read())
        workers = []
        for m in markers:
            try:
                workers.append(json.load(open(m))["pid"])
            except (OSError, ValueError):
                pass
        g.send_signal(sig)  # the grid's own process, not its group
        code = g.wait(timeout=60)
        if code != -sig:
            fail(f"the grid ended with {code}, not by signal {sig}", out=open(os.path.join(WORK, "grid.log")).read())
        for _ in range(200):
            if not any(alive(p) for p in workers):
                break
            time.sleep(0.05)
        if any(alive(p) for p in workers):
            for p in workers:
                if alive(p):
                    os.kill(p, signal.SIGKILL)
            fail(f"workers {workers} outlived the grid stopped by signal {sig}")
        out = must(["grid", "pinn", "--preset", "table-ours", "--out", grid, "--status", "--json"])
        status = json.loads(out)
        if status["running"] != 0:
            fail("a stopped grid's cells still read as running", out=out)
    print("signals: a grid stopped by SIGTERM or SIGINT stops its workers")


def main():
    global PLN, WORK
    PLN, WORK, part = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    WORK = os.path.join(WORK, part)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    {"plot": part_plot, "paths": part_paths, "bombs": part_bombs, "owners": part_owners,
     "signals": part_signals}[part]()
    print(f"untrusted records ({part}): every attack refused or harmless")


if __name__ == "__main__":
    main()
