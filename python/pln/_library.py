"""Finds and loads the shared library that registers torch.ops.pln.

Two builds of it exist. ``libpln.so`` links LibTorch's C++ API and registers
every kernel in C++: it serves the one torch (major.minor) it was built
against. ``libpln_stable.so``, the package's build for torch 2.10 and later,
uses only LibTorch's stable ABI and serves every torch from the one it was
built against on; ``_stable_ops`` registers in Python what the stable ABI
cannot express (autograd, fake kernels, autocast, the checks of the composite
kernels).
"""

import ctypes
import os
from pathlib import Path
from typing import List, Optional, Tuple

import torch

LIBRARY_NAME = "libpln.so"
STABLE_LIBRARY_NAME = "libpln_stable.so"
_PACKAGE_DIR = Path(__file__).resolve().parent

#: The file the operators were loaded from (None: registered before pln was imported).
loaded_from: Optional[Path] = None


_MARKER = b"pln:libtorch="
_STABLE_MARKER = b"pln:stable-abi="


def _candidates() -> List[Tuple[str, Path]]:
    env = os.environ.get("PLN_LIBRARY")
    if env:
        # An explicit choice is the only candidate: a wrong path is an error, not a fallback.
        return [("PLN_LIBRARY", Path(env))]
    repo = _PACKAGE_DIR.parents[1]
    return [
        ("installed beside the package", _PACKAGE_DIR / STABLE_LIBRARY_NAME),
        ("installed beside the package", _PACKAGE_DIR / LIBRARY_NAME),
        ("default build directory", repo / "build" / LIBRARY_NAME),
        ("PyTorch 2.x build directory", repo / "build-torch2" / LIBRARY_NAME),
    ]


def _marked(data: bytes, marker: bytes) -> Optional[str]:
    at = data.find(marker)
    if at < 0:
        return None
    end = data.find(b"\0", at)
    return data[at + len(marker):end].decode(errors="replace")


def _built_against(path: Path) -> Tuple[Optional[str], bool]:
    """The LibTorch version the library was built against, read from the file
    without loading it (None: a build that does not say), and whether it is
    the stable-ABI build (which serves that version and every later one)."""
    data = path.read_bytes()
    stable = _marked(data, _STABLE_MARKER)
    if stable is not None:
        return stable, True
    return _marked(data, _MARKER), False


def _version_tuple(version: str) -> Tuple[int, ...]:
    return tuple(int(part) for part in _minor(version).split(".") if part.isdigit())


def _serves(built: str, stable: bool) -> bool:
    if stable:
        return _version_tuple(torch.__version__) >= _version_tuple(built)
    return _minor(built) == _minor(torch.__version__)


def _registered() -> bool:
    return hasattr(torch.ops.pln, "parallel_ln")


def _minor(version: str) -> str:
    return ".".join(version.split("+")[0].split(".")[:2])


def _check_torch_version(path: Path, origin: str) -> None:
    try:
        built = ctypes.CDLL(str(path)).pln_torch_version
    except AttributeError:
        return  # an older build without the symbol; its registrations loaded fine
    built.restype = ctypes.c_char_p
    version = built().decode()
    if _minor(version) != _minor(torch.__version__):
        raise ImportError(
            f"pln: {path} ({origin}) was built against LibTorch {version}, but this interpreter has "
            f"torch {torch.__version__}; rebuild it against this torch "
            "(pip install . at the repository root: a few minutes, pip install -v . shows them)")


def load() -> None:
    """Loads the operator library once; raises ImportError saying what went wrong."""
    global loaded_from
    if _registered():
        return  # loaded already (another import, or a C++ host that links libpln)
    tried, mismatched = [], []
    for origin, path in _candidates():
        if not path.is_file():
            tried.append(f"{path} ({origin})")
            continue
        built, stable = _built_against(path)
        if built is not None and not _serves(built, stable):
            mismatched.append(f"{path} ({origin}) was built against " + (
                f"LibTorch's stable ABI of torch {built}, which serves torch {built} and later" if stable
                else f"LibTorch {built}"))
            continue
        try:
            torch.ops.load_library(str(path))
        except OSError as error:
            raise ImportError(f"pln: cannot load {path} ({origin}): {error}") from error
        if not _registered():
            raise ImportError(
                f"pln: {path} ({origin}) loaded, but it does not register the torch.ops.pln operators; "
                f"point PLN_LIBRARY at pln's {LIBRARY_NAME}")
        if stable:
            from . import _stable_ops
            _stable_ops.register()
        else:
            _check_torch_version(path, origin)
        loaded_from = path
        return
    if mismatched:
        raise ImportError(
            "pln: " + "; ".join(mismatched) + f", but this interpreter has torch {torch.__version__}; "
            "rebuild it against this torch (pip install . at the repository root: a few minutes, "
            "pip install -v . shows them; or make test-torch2 for build-torch2/)")
    raise ImportError(
        "pln: cannot find the operator library " + LIBRARY_NAME + "; looked for "
        + ", ".join(tried)
        + ". Install the package with `pip install .` at the repository root, "
        "build it with `make` (it lands in build/), or point PLN_LIBRARY at an existing "
        + LIBRARY_NAME + "."
    )
