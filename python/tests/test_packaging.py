"""The package as users get it: installed with pip (with and without build
isolation, into an environment without torch), and the import errors for a
library that is missing, unloadable or built against another LibTorch."""

import os
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest
import torch

import pln
from shared import REPO, needs_torch2, run_python

#: Whether `pip install .` builds the package over LibTorch's stable ABI (libpln_stable): torch 2.10 and later.
STABLE_ABI_TORCH = tuple(int(n) for n in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 10)

pytestmark = needs_torch2


# ------------------------------------------------- the installed package ---

def installed_or_skip(tmp_path):
    probe = run_python("import pln; print(pln.__file__)", tmp_path)
    if probe.returncode != 0:
        if os.environ.get("PLN_REQUIRE_INSTALLED"):
            pytest.fail("pln is not installed in this interpreter: " + probe.stderr[-2000:])
        pytest.skip("pln is not installed in this interpreter (pip install --no-build-isolation .)")
    return Path(probe.stdout.strip())


def test_installed_package_from_outside_the_repository(tmp_path):
    init = installed_or_skip(tmp_path)
    assert init.parent != REPO / "python" / "pln", init
    code = """
        import torch, pln
        from torch.library import opcheck
        assert pln.library_path.parent == __import__("pathlib").Path(pln.__file__).parent, pln.library_path
        x = torch.randn(4, 16, 3, 3, requires_grad=True)
        w = torch.rand(16, requires_grad=True); b = torch.randn(16, requires_grad=True)
        result = opcheck(torch.ops.pln.parallel_ln.default, (x, w, b, 16, 4))
        assert all(v == "SUCCESS" for v in result.values()), result
        model = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 1), pln.ParallelLN(16, 4))
        compiled = torch.compile(model, fullgraph=True)
        torch.testing.assert_close(compiled(x), model(x), atol=1e-5, rtol=1e-5)
        ep = torch.export.export(model, (x.detach(),))
        torch.testing.assert_close(ep.module()(x.detach()), model(x.detach()), atol=1e-5, rtol=1e-5)
        print("installed:", pln.library_path)
    """
    result = run_python(code, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "installed:" in result.stdout


def wheelhouse_or_skip():
    """scikit-build-core's wheels, which scripts/venv keeps in .venv/wheelhouse so
    that pip's isolated build environment installs without the network."""
    wheelhouse = Path(sys.prefix) / "wheelhouse"
    if not any(wheelhouse.glob("scikit_build_core-*.whl")):
        if os.environ.get("PLN_REQUIRE_INSTALLED"):
            pytest.fail(f"no scikit-build-core wheel in {wheelhouse} (scripts/venv downloads it)")
        pytest.skip(f"no scikit-build-core wheel in {wheelhouse} (scripts/venv downloads it)")
    return wheelhouse


def fresh_environment(path):
    """A new virtual environment: no pip, no torch."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    return path / "bin" / "python"


def see_this_torch(python):
    """A .pth file puts this interpreter's site-packages (its torch) after the environment's own."""
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "torch-of-the-test.pth").write_text(str(Path(torch.__file__).parents[1]) + "\n")


def pip(*args, cwd, timeout=900):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PLN_LIBRARY")}
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def install_stopping_before_build(python, cwd, *flags):
    """`pip install <this checkout>` into `python`'s environment, which must fail
    within a minute, before building, saying so; pip's output."""
    start = time.monotonic()
    result = pip("--python", str(python), "install", "--no-index", *flags, str(REPO), cwd=cwd)
    seconds = time.monotonic() - start
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "Nothing was built" in output, output[-3000:]
    assert seconds < 60, seconds
    return output


def test_pip_install_without_torch_stops_within_seconds_saying_what_to_type(tmp_path):
    """`pip install <path>` without flags, in an environment without torch: the
    backend stops before building (no torch of PyPI's newest fetched to build
    against), saying what to install first."""
    wheelhouse = wheelhouse_or_skip()
    python = fresh_environment(tmp_path / "env")
    output = install_stopping_before_build(python, tmp_path, "--find-links", str(wheelhouse))
    assert "pln: no torch in this environment" in output, output[-3000:]
    assert f"{python} -m pip install torch" in output


def test_pip_install_without_build_isolation_or_scikit_build_core_says_what_to_type(tmp_path):
    """`pip install --no-build-isolation <path>` in an environment without
    scikit-build-core: the backend stops before building, saying what to
    install first, rather than with ImportError's traceback."""
    python = fresh_environment(tmp_path / "env")
    output = install_stopping_before_build(python, tmp_path, "--no-deps", "--no-build-isolation")
    assert "pln: building needs scikit-build-core (>= 0.10)" in output, output[-3000:]
    assert f"{python} -m pip install 'scikit-build-core>=0.10'" in output
    assert "Traceback" not in output, output[-3000:]


def test_pip_wheel_with_build_isolation_builds_against_this_torch_and_installs_elsewhere(tmp_path):
    """`pip wheel <path>` without --no-build-isolation builds against the
    environment's torch (seen through pip's isolation), and the wheel installs
    into another environment with the same torch."""
    installed_or_skip(tmp_path)
    wheelhouse = wheelhouse_or_skip()
    # Its own build directory: scikit-build-core clears one that another
    # (isolated) environment configured, and build-pip/ serves `make venv`.
    # It stays at one place in the checkout, one level under it as build-pip/,
    # so that ccache (which keys paths relative to the checkout and to the
    # build directory) serves the compilations of `make venv` and of an earlier
    # run. The CUDA kernels are left out to save nvcc's minutes; the build is
    # otherwise the one `pip install` makes.
    build_dir = REPO / "build-pip-isolated"
    result = pip("wheel", "--no-deps", "--no-index", "--find-links", str(wheelhouse), "-w", str(tmp_path / "dist"),
                 f"--config-settings=build-dir={build_dir}", "--config-settings=cmake.define.PLN_CUDA=OFF",
                 str(REPO), cwd=tmp_path)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    (wheel,) = (tmp_path / "dist").glob("pln-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert "pln/py.typed" in names and "pln/functional.py" in names
        if STABLE_ABI_TORCH:  # one library over the stable ABI of the oldest torch it serves
            assert "pln/libpln.so" not in names, names
            assert b"pln:stable-abi=2.10\0" in archive.read("pln/libpln_stable.so")
        else:
            assert b"pln:libtorch=" + torch.__version__.split("+")[0].encode() in archive.read("pln/libpln.so")
    python = fresh_environment(tmp_path / "other")
    result = pip("--python", str(python), "install", "--no-deps", "--no-index", str(wheel), cwd=tmp_path, timeout=300)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    see_this_torch(python)  # after the install, which would otherwise find this pln installed already
    code = textwrap.dedent("""
        import torch, pln
        print(pln.__file__)
        x = torch.randn(3, 5, 16)
        y = pln.functional.parallel_ln(x, 16)
        torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, (16,)), atol=1e-5, rtol=1e-5)
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PLN_LIBRARY")}
    run = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith(str(tmp_path / "other")), run.stdout


# ------------------------------------------------------ the Python front end ---

def test_library_without_the_operators_is_an_import_error_naming_it(tmp_path):
    other = Path(torch.__file__).parent / "lib" / "libc10.so"
    result = run_python("import pln", tmp_path, clean=False,
                        env_extra={"PLN_LIBRARY": str(other),
                                   "PYTHONPATH": str(Path(pln.__file__).parents[1])})
    assert result.returncode != 0
    assert "ImportError" in result.stderr
    assert f"{other} (PLN_LIBRARY) loaded, but it does not register the torch.ops.pln operators" in result.stderr


def test_library_of_another_libtorch_is_an_import_error_before_loading(tmp_path):
    # A copy of the library whose marker names LibTorch 1.13: loading it could
    # abort the process, so the package must refuse it from the file alone.
    if pln.library_path.name != "libpln.so":
        pytest.skip(f"the package runs {pln.library_path.name}, not the library built against one torch")
    data = Path(pln.library_path).read_bytes()
    marker = b"pln:libtorch=" + torch.__version__.split("+")[0].encode()
    assert marker in data
    other = marker[: len(b"pln:libtorch=")] + b"1.13.0".ljust(len(marker) - len(b"pln:libtorch="), b"\0")
    (tmp_path / "libpln.so").write_bytes(data.replace(marker, other))
    env = dict(os.environ, PLN_LIBRARY=str(tmp_path / "libpln.so"), PYTHONPATH=str(REPO / "python"))
    result = subprocess.run([sys.executable, "-c", "import pln"], env=env, capture_output=True, text=True)
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "was built against LibTorch 1.13.0, but this interpreter has torch" in result.stderr, result.stderr


def stable_library_or_skip() -> Path:
    if pln.library_path.name != "libpln_stable.so":
        pytest.skip(f"the package runs {pln.library_path.name}, not the build over the stable ABI")
    return Path(pln.library_path)


def test_stable_library_of_a_later_torch_is_an_import_error_naming_both(tmp_path):
    """A libpln_stable built for the stable ABI of a torch later than this
    one: refused from the file alone, with both versions and the command."""
    data = stable_library_or_skip().read_bytes()
    marker = b"pln:stable-abi=2.10\0"
    assert marker in data
    (tmp_path / "libpln_stable.so").write_bytes(data.replace(marker, b"pln:stable-abi=9.99\0"))
    env = dict(os.environ, PLN_LIBRARY=str(tmp_path / "libpln_stable.so"), PYTHONPATH=str(REPO / "python"))
    result = subprocess.run([sys.executable, "-c", "import pln"], env=env, capture_output=True, text=True)
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert ("was built against LibTorch's stable ABI of torch 9.99, which serves torch 9.99 and later, but this "
            f"interpreter has torch {torch.__version__}") in result.stderr, result.stderr
    assert "pip install ." in result.stderr


def test_stable_library_calls_libtorch_through_its_c_shim_alone():
    """libpln_stable imports no C++ symbol of LibTorch (c10::, at::,
    torch::): what it calls of torch is the stable ABI's C functions, which
    later torch versions keep."""
    library = stable_library_or_skip()
    result = subprocess.run(["nm", "-D", "--undefined-only", str(library)], capture_output=True, text=True, check=True)
    symbols = [line.split()[-1] for line in result.stdout.splitlines() if line.strip()]
    cpp_of_torch = [s for s in symbols if s.startswith("_Z") and any(n in s for n in ("3c10", "2at", "5torch", "6caffe2"))]
    assert not cpp_of_torch, cpp_of_torch
    shim = [s for s in symbols if s.startswith(("aoti_torch_", "torch_"))]
    assert "aoti_torch_library_init_fragment" in shim or "aoti_torch_library_init_impl" in shim, shim


def test_unloadable_library_is_an_import_error_naming_it(tmp_path):
    bad = tmp_path / "libpln.so"
    bad.write_bytes(b"not an ELF file")
    result = run_python("import pln", tmp_path, clean=False,
                        env_extra={"PLN_LIBRARY": str(bad), "PYTHONPATH": str(Path(pln.__file__).parents[1])})
    assert result.returncode != 0
