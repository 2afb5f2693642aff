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
  checkpoints  crafted checkpoints refused by name before anything is built
               from them; an earlier version's pickled checkpoint never loaded
  links    symbolic links planted in grids and runs refused; files pln did not
           write (dot files, a planted .replaced) never deleted
  docs     table markers and labels that would reach outside the repository
  limits   networks, CSV files and counts whose size would exhaust memory
  output   escape sequences in records printed escaped; packs and errors that
           name the file and the field

usage: python3 untrusted_records.py PLN WORKDIR PART
"""

import gzip
import hashlib
import json
import os
import resource
import struct
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

    # A FIFO in a checkpoint's place.
    stopped = os.path.join(WORK, "stopped")
    run_args = ["pinn", "--preset", "smoke", "--threads", "1", "--set", "checkpoint_every=10"]
    must(run_args + ["--out", stopped])
    os.remove(os.path.join(stopped, "summary.json"))  # as a run stopped after its checkpoint
    checkpoint = os.path.join(stopped, "checkpoint.safetensors")
    os.remove(checkpoint)
    os.mkfifo(checkpoint)
    refused(run_args + ["--resume", "--out", stopped], "checkpoint.safetensors", "not a regular file", timeout=120)
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
    open(os.path.join(finished, ".pln-tmp.eval.csv.Ab3dEf"), "w").write("torn")
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
    if {k: v for k, v in tree(aside).items() if k != ".pln-set-aside"} != kept:
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



# ----------------------------------------------------------- checkpoints ---

def read_safetensors(path):
    """(header dict, data bytes) of a safetensors file, read by hand."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write_safetensors(path, header, data):
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def peak_mib():
    """The largest resident size of any child so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def part_checkpoints():
    stopped = os.path.join(WORK, "stopped")
    run_args = ["pinn", "--preset", "smoke", "--threads", "1", "--set", "checkpoint_every=10"]
    must(run_args + ["--out", stopped])
    os.remove(os.path.join(stopped, "summary.json"))  # as a run stopped after its checkpoint
    checkpoint = os.path.join(stopped, "checkpoint.safetensors")
    if os.path.exists(os.path.join(stopped, "checkpoint.pt")):
        fail("a run wrote a pickled checkpoint.pt")
    pristine = open(checkpoint, "rb").read()
    header, data = read_safetensors(checkpoint)
    state = json.loads(header["__metadata__"]["state"])
    adam = next(k for k in header if k.startswith("optimizer.") and k.endswith(".exp_avg"))

    def crafted(change, *needles):
        """The checkpoint with `change(header, state)` applied: refused before 'resumed'."""
        h, st = json.loads(json.dumps(header)), json.loads(json.dumps(state))
        change(h, st)
        h["__metadata__"]["state"] = json.dumps(st)
        write_safetensors(checkpoint, h, data)
        rc, out, err = run(run_args + ["--resume", "--out", stopped])
        message = "\n".join(l for l in err.splitlines() if l.startswith("pln: "))
        if rc != 1 or not all(n in message for n in ("checkpoint.safetensors",) + needles) or "resumed" in out:
            fail(f"a crafted checkpoint should be refused with {needles} before anything resumed", rc, out, err)
        return message

    # The Adam state's range past the data (LibTorch's loader freed memory twice).
    def past_the_end(h, st):
        h[adam]["data_offsets"][1] = len(data) + 4096
    crafted(past_the_end, adam, "data_offsets")
    # Two tensors sharing bytes; a gap; a range not matching the shape.
    def overlap(h, st):
        h[adam]["data_offsets"] = [0, h[adam]["data_offsets"][1] - h[adam]["data_offsets"][0]]
    crafted(overlap, "data_offsets")
    def wrong_dtype(h, st):
        h[adam]["dtype"] = "F32"
    crafted(wrong_dtype, adam)
    # A tensor of another shape (same bytes): named before anything loads.
    weight = next(k for k in header if k.startswith("model.") and len(header[k]["shape"]) == 2)
    def transposed(h, st):
        h[weight]["shape"] = list(reversed(h[weight]["shape"]))
    crafted(transposed, weight, "this run's is")
    # A count past the run's sizes: 400,000,000 and 2^62 last finite copies.
    for count in (400000000, 2 ** 62):
        def many(h, st, count=count):
            st["last_finite"] = count
        crafted(many, "state.last_finite")
    def too_many_steps(h, st):
        name = next(iter(st["optimizer"]["steps"]))
        st["optimizer"]["steps"][name] = st["step"] + 1
    crafted(too_many_steps, "state.optimizer.steps")
    def short_generator(h, st):
        st["generators"]["default"] = st["generators"]["default"][:64]
    crafted(short_generator, "state.generators.default")
    # A header length past the file, and one past the limit.
    with open(checkpoint, "wb") as f:
        f.write(struct.pack("<Q", 1 << 40) + b"{}")
    refused(run_args + ["--resume", "--out", stopped], "checkpoint.safetensors", "header's length")
    if peak_mib() > 1536:
        fail(f"reading crafted checkpoints took {peak_mib():.0f} MiB")

    # An earlier version's pickled checkpoint (a zip of pickles, whose
    # directory LibTorch's reader trusts) is refused without being opened.
    os.remove(checkpoint)
    pickled = os.path.join(stopped, "checkpoint.pt")
    with zipfile.ZipFile(pickled, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    refused(run_args + ["--resume", "--out", stopped], "checkpoint.pt", "earlier versions",
                      "without --resume")
    # Without --resume the run starts afresh and writes the new format.
    must(run_args + ["--out", stopped])
    if os.path.exists(pickled) or not os.path.exists(checkpoint):
        fail("a fresh start kept the pickled checkpoint or wrote no new one")
    # The run's own checkpoint resumes.
    os.remove(os.path.join(stopped, "summary.json"))
    with open(checkpoint, "wb") as f:
        f.write(pristine)
    out = must(run_args + ["--resume", "--out", stopped])
    if "resumed from" not in out:
        fail("the run's own checkpoint did not resume", out=out)
    print("checkpoints: crafted ones refused by tensor and field, the pickled format never loaded")


# ----------------------------------------------------------------- links ---

def part_links():
    grid = smoke_grid(os.path.join(WORK, "grid"))
    outside = os.path.join(WORK, "outside")
    os.makedirs(outside)
    victim = os.path.join(outside, "victim.txt")
    open(victim, "w").write("precious\n")
    cells = cells_of(grid)
    grid_args = ["grid", "pinn", "--preset", "smoke", "--out", grid, "--jobs", "1", "--threads", "1"]
    # A cell's run.log planted as a link: its worker's log would truncate the target.
    os.remove(os.path.join(grid, cells[0], "summary.json"))
    log = os.path.join(grid, cells[0], "run.log")
    os.remove(log)
    os.symlink(victim, log)
    rc, out, err = run(grid_args)
    if open(victim).read() != "precious\n":
        fail("a planted run.log link truncated its target", rc, out, err)
    if "run.log" not in out + err or "symbolic link" not in out + err:
        fail("a planted run.log link was not refused by name", rc, out, err)
    os.remove(log)
    # A cell directory planted as a link: the run would go outside the grid.
    shutil.move(os.path.join(grid, cells[0]), os.path.join(outside, "cell"))
    os.symlink(os.path.join(outside, "cell"), os.path.join(grid, cells[0]))
    before = tree(outside)
    rc, out, err = run(grid_args)
    if tree(outside) != before:
        fail("a grid wrote through a planted cell link", rc, out, err)
    if "symbolic link" not in out + err or cells[0] not in out + err:
        fail("a planted cell link was not refused by name", rc, out, err)
    os.remove(os.path.join(grid, cells[0]))
    shutil.move(os.path.join(outside, "cell"), os.path.join(grid, cells[0]))
    must(grid_args)
    # `pln plot` on a link to a grid would write its figures into the target.
    link = os.path.join(WORK, "link")
    os.symlink(grid, link)
    before = tree(grid)
    refused(["plot", link], "link", "symbolic link")
    if tree(grid) != before:
        fail("pln plot wrote through a link")

    # Dot files that look like a temporary (.NAME.XXXXXX) are not pln's.
    demo = os.path.join(WORK, "demo")
    os.makedirs(demo)
    for name in (".zshrc.backup", ".notes.backup"):
        open(os.path.join(demo, name), "w").write("mine\n")
    open(os.path.join(demo, ".pln-tmp.fit.csv.Ab3dEf"), "w").write("torn")
    must(["demo", "--steps", "30", "--widths", "8", "--threads", "1", "--out", demo])
    for name in (".zshrc.backup", ".notes.backup"):
        if not os.path.exists(os.path.join(demo, name)):
            fail(f"pln demo deleted {name}, a file it did not write")
    if os.path.exists(os.path.join(demo, ".pln-tmp.fit.csv.Ab3dEf")):
        fail("pln demo left its own stale temporary file")
    # A planted .replaced copied from a matching run is not taken for one pln set aside.
    run_dir = os.path.join(WORK, "run")
    pinn = ["pinn", "--preset", "smoke", "--threads", "1"]
    must(pinn + ["--out", run_dir])
    planted = os.path.join(WORK, "planted")
    os.makedirs(os.path.join(planted, ".replaced"))
    for name in ("config.json", "summary.json"):
        shutil.copy(os.path.join(run_dir, name), os.path.join(planted, ".replaced", name))
    for name in ("notes.txt", "thesis.tex"):
        open(os.path.join(planted, name), "w").write("mine\n")
    rc, out, err = run(pinn + ["--out", planted])
    for name in ("notes.txt", "thesis.tex"):
        if not os.path.exists(os.path.join(planted, name)):
            fail(f"a planted .replaced made the run delete {name}", rc, out, err)
    if not os.path.exists(os.path.join(planted, ".replaced", "summary.json")):
        fail("the planted .replaced was deleted", rc, out, err)
    print("links: planted links refused by name, no file pln did not write deleted")


# ------------------------------------------------------------------ docs ---

def repository_copy(name):
    """A repository of one shipped results folder, for `pln docs --root`."""
    root = os.path.join(WORK, name)
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results")
    shutil.copytree(os.path.join(source, "fourier-paper"), os.path.join(root, "results", "fourier-paper"))
    return root


def part_docs():
    secret = os.path.join(WORK, "secret.txt")
    open(secret, "w").write("SECRET-TEXT\n")
    root = repository_copy("repo")
    readme = os.path.join(root, "README.md")
    # A grid beside the repository: a marker naming it would draw its figures
    # into the folder beside the scratch directory (TMPDIR here).
    victim = os.path.join(WORK, "victimgrid")
    shutil.copytree(os.path.join(root, "results", "fourier-paper"), victim)
    tmp = os.path.join(WORK, "tmp")
    os.makedirs(tmp)
    env = dict(ENV, TMPDIR=tmp)
    before = tree(victim)
    for marker, needle in [("<!-- table results/fourier-paper ../../../secret.txt -->", "secret.txt"),
                           ("<!-- table ../victimgrid error_table.md -->", "../victimgrid"),
                           (f"<!-- table {victim} error_table.md -->", "victimgrid")]:
        open(readme, "w").write(f"# doc\n\n{marker}\nold\n<!-- end table -->\n")
        for update in ([], ["--update"]):
            message = refused(["docs", "--root", root] + update, "README.md:3", needle, "refused", env=env)
            if "SECRET-TEXT" in message or "SECRET-TEXT" in open(readme).read():
                fail(f"pln docs {update} read a file through a marker")
    if tree(victim) != before or os.listdir(tmp):
        fail(f"pln docs wrote outside the repository: {sorted(tree(victim))[:5]}, {os.listdir(tmp)}")
    # A label from the records that would close the table and open a marker
    # naming a file outside: written as entities, two updates copy nothing.
    records = os.path.join(root, "results", "fourier-paper", "records.csv")
    header, rows = read_csv(records)
    model = header.index("model")
    label = rows[0][model]
    injected = label + "\n<!-- end table -->\n<!-- table results/fourier-paper ../../../secret.txt -->\n"
    write_csv(records, header, [r[:model] + [injected] + r[model + 1:] if r[model] == label else r for r in rows])
    open(readme, "w").write("# doc\n\n<!-- table results/fourier-paper error_table.md -->\n<!-- end table -->\n")
    for _ in range(2):
        rc, out, err = run(["docs", "--root", root, "--update"])
        if rc not in (0, 1):
            fail("pln docs --update ended badly", rc, out, err)
    text = open(readme).read()
    if "SECRET-TEXT" in text or text.count("<!-- table") != 1 or text.count("<!-- end table -->") != 1:
        fail(f"a label injected a marker into README.md:\n{text[:3000]}")
    must(["docs", "--root", root])

    # A vit grid's labels name its figures' data files: never a path out.
    grid = os.path.join(WORK, "vit", "grid")
    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results", "vit-cpu")
    shutil.copytree(shipped, grid)
    figures = os.path.join(WORK, "vit", "figures")
    os.makedirs(os.path.join(figures, "plot-data"))
    open(os.path.join(WORK, "vit", "dataset.csv"), "w").write("mine\n")
    header, rows = read_csv(os.path.join(grid, "records.csv"))
    labels = header.index("labels")
    half = len(rows) // 2
    write_csv(os.path.join(grid, "records.csv"), header,
              [r[:labels] + ["x/../../../elsewhere/escaped" if i < half else "/../../../dataset"] + r[labels + 1:]
               for i, r in enumerate(rows)])
    before = tree(WORK, skip=(figures, grid))
    rc, out, err = run(["plot", grid, "--out", figures])
    if rc not in (0, 1):
        fail("pln plot on crafted labels ended badly", rc, out, err)
    if tree(WORK, skip=(figures, grid)) != before:
        fail("pln plot wrote outside its output folder through a label", rc, out, err)
    for base, _, files in os.walk(figures):
        if os.path.relpath(base, figures) not in (".", "plot-data"):
            fail(f"pln plot made a folder from a label: {base}")
    print("docs: markers and labels reach no file outside the repository or the output folder")


# ---------------------------------------------------------------- limits ---

def part_limits():
    out = os.path.join(WORK, "sized")
    for family, key, value, needle in [("pinn", "depth", "2147483648", "depth x width^2"),
                                       ("vit", "blocks", "100000000", "blocks x"),
                                       ("fourier", "depth", "100000000", "depth x width^2"),
                                       ("cnn", "depth", "100000000", "depth convolutions"),
                                       ("vgg", "width", "1000000", "13 convolutions"),
                                       ("vit", "mlp_ratio", "100000000", "mlp_ratio")]:
        start = time.time()
        refused([family, "--preset", "smoke", "--set", f"{key}={value}", "--out", out], f"{family}:", needle,
                "--max-elements", timeout=60)
        if time.time() - start > 30:
            fail(f"{family} {key}={value} took {time.time() - start:.0f} s to be refused")
    if os.path.exists(out) and os.listdir(out):
        fail(f"a refused configuration wrote {os.listdir(out)}")
    if peak_mib() > 1536:
        fail(f"refusing oversized networks took {peak_mib():.0f} MiB")
    # A 48 MiB records.csv of commas: refused within a few times its size.
    grid = smoke_grid(os.path.join(WORK, "grid"))
    with open(os.path.join(grid, "records.csv"), "w") as f:
        line = "," * 1023 + "\n"
        for _ in range(48 * 1024):
            f.write(line)
    refused(["validate", "--skip-unit-tests", "--skip-smoke", "--check", grid], "records.csv", "fields")
    if peak_mib() > 1536:
        fail(f"reading a 48 MiB CSV of commas took {peak_mib():.0f} MiB")
    print(f"limits: oversized networks and a CSV of commas refused (peak {peak_mib():.0f} MiB)")


# ---------------------------------------------------------------- output ---

def part_output():
    grid = smoke_grid(os.path.join(WORK, "grid"))
    header, rows = read_csv(os.path.join(grid, "records.csv"))
    pristine = open(os.path.join(grid, "records.csv"), "rb").read()
    cell = header.index("cell")
    escape = "\x1b]0;owned\x07\x1b[2J"
    write_csv(os.path.join(grid, "records.csv"), header,
              [r[:cell] + [r[cell] + escape] + r[cell + 1:] if i == 0 else r for i, r in enumerate(rows)])
    rc, out, err = run(["validate", "--skip-unit-tests", "--skip-smoke", "--check", grid])
    if "\x1b" in out + err or "\\x1b" not in out + err:
        fail("validate --check printed a record's escape sequence raw", rc, out, err)
    with open(os.path.join(grid, "records.csv"), "wb") as f:
        f.write(pristine)
    # running.json's host and start, as --status prints them.
    marker = os.path.join(grid, cells_of(grid)[0], "running.json")
    os.remove(os.path.join(grid, cells_of(grid)[0], "summary.json"))
    json.dump({"host": "elsewhere" + escape, "pid": 1, "started": "now" + escape}, open(marker, "w"))
    out = must(["grid", "pinn", "--preset", "smoke", "--out", grid, "--status"])
    if "\x1b" in out or "\\x1b" not in out:
        fail("grid --status printed running.json's escape sequence raw", out=out)
    os.remove(marker)
    must(["grid", "pinn", "--preset", "smoke", "--out", grid, "--jobs", "1", "--threads", "1"])

    # A records.csv that lists one cell twice and another not at all.
    dest = os.path.join(WORK, "packs", "p1")
    header, rows = read_csv(os.path.join(grid, "records.csv"))
    write_csv(os.path.join(grid, "records.csv"), header, [rows[0]] + [rows[0]] + rows[2:])
    refused(["pack", grid, dest], "records.csv", "both name cell")
    write_csv(os.path.join(grid, "records.csv"), header, rows)
    # A revision that JSON cannot hold: refused by name, nothing left beside the destination.
    rc, out, err = run(["pack", grid, dest, "--revision", "\udcff\udcfe"],
                       env=dict(ENV, PYTHONIOENCODING="utf-8", LC_ALL="C.UTF-8"))
    if rc != 1 or "--revision" not in err:
        fail("pack --revision of bytes that are not UTF-8 was not refused by name", rc, out, err)
    if os.path.exists(os.path.join(WORK, "packs")) and os.listdir(os.path.join(WORK, "packs")):
        fail(f"a refused pack left {os.listdir(os.path.join(WORK, 'packs'))}")

    # A summary.json that is a nested array, where --resume reads it.
    finished = os.path.join(WORK, "finished")
    pinn = ["pinn", "--preset", "smoke", "--threads", "1"]
    must(pinn + ["--out", finished])
    open(os.path.join(finished, "summary.json"), "w").write("[[1, 2], [3]]")
    refused(pinn + ["--resume", "--out", finished], "summary.json", "a JSON object expected")
    refused(["validate", "--skip-unit-tests", "--skip-smoke", "--check", finished], "summary.json")
    print("output: escape sequences printed escaped, packs and errors name the file and field")


def main():
    global PLN, WORK
    PLN, WORK, part = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    WORK = os.path.join(WORK, part)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    {"plot": part_plot, "paths": part_paths, "bombs": part_bombs, "owners": part_owners,
     "signals": part_signals, "checkpoints": part_checkpoints, "links": part_links, "docs": part_docs,
     "limits": part_limits, "output": part_output}[part]()
    print(f"untrusted records ({part}): every attack refused or harmless")


if __name__ == "__main__":
    main()
