"""The PEP 517 backend of `pip install .`: scikit-build-core, built against
the torch the installing environment already has.

libpln must be compiled against the very torch it will run with (its C++ ABI
and version). pip's default build isolation hides the environment's packages
from the build, and a build requirement on torch would fetch the newest torch
into the isolated environment and build against that. So torch is not a build
requirement; this backend finds the environment's torch (pip runs the
backend with the environment's own interpreter, isolation only hides its
site-packages) and hands CMake an interpreter that sees it. Where no torch is
installed it stops within seconds, before building, saying what to type.

A cross build (a wheel for aarch64 built on x86-64, say) names the target's
torch itself, unpacked, with -C cmake.define.PLN_TORCH_SITE=DIR and a CMake
toolchain file (cmake/TorchFromWheel.cmake); the environment's torch, of
another architecture, is then neither needed nor used.
"""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

try:
    from scikit_build_core import build as _skbuild
except ImportError:  # pip install --no-build-isolation in an environment without it
    raise SystemExit(
        "\npln: building needs scikit-build-core (>= 0.10) in this environment ({}): pip's default, "
        "isolated build fetches it, but with --no-build-isolation it must be installed first:\n\n"
        "    {} -m pip install 'scikit-build-core>=0.10'\n\nNothing was built.\n".format(
            sys.executable, sys.executable)) from None

_PROBE = "import torch, sys; print(torch.__version__); print(sys.executable)"
# Variables through which pip's build isolation hides the environment's packages.
_ISOLATION = ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME")


def _probe(env: Dict[str, str]) -> Optional[str]:
    try:
        result = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                                text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.split("\n")[0].strip() if result.returncode == 0 else None


def _find_torch() -> Tuple[str, bool]:
    """The environment's torch version, and whether the build must leave pip's isolation to see it."""
    version = _probe(dict(os.environ))
    if version:
        return version, False
    clean = {k: v for k, v in os.environ.items() if k not in _ISOLATION}
    version = _probe(clean)
    if version:
        return version, True
    raise SystemExit(
        "\npln: no torch in this environment ({}).\n"
        "pln's operators are compiled against the torch they will run with, so torch must be "
        "installed first:\n\n    {} -m pip install torch\n\nthen install pln again "
        "(pip install <this directory>). Nothing was built.\n".format(sys.executable, sys.executable))


def _torch_python(isolated: bool, scratch: List[str]) -> str:
    if not isolated:
        return sys.executable
    folder = tempfile.mkdtemp(prefix="pln-build-")
    scratch.append(folder)
    wrapper = os.path.join(folder, "python-with-torch")
    with open(wrapper, "w") as out:
        out.write("#!/bin/sh\nexec env -u PYTHONPATH -u PYTHONNOUSERSITE -u PYTHONHOME "
                  f"'{sys.executable}' \"$@\"\n")
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return wrapper


def _settings(config_settings, python: str):
    settings = dict(config_settings or {})
    settings.setdefault("cmake.define.PLN_TORCH_PYTHON", python)
    return settings


def get_requires_for_build_wheel(config_settings=None) -> List[str]:
    if _cross_build(config_settings):
        print("pln: cross build against the torch of " + config_settings["cmake.define.PLN_TORCH_SITE"],
              file=sys.stderr)
        return _skbuild.get_requires_for_build_wheel(config_settings)
    version, isolated = _find_torch()
    print(f"pln: building against torch {version} of {sys.executable}"
          + (" (seen through pip's build isolation)" if isolated else ""), file=sys.stderr)
    return _skbuild.get_requires_for_build_wheel(config_settings)


def _cross_build(config_settings) -> bool:
    """Whether the build names its torch (PLN_TORCH_SITE): a cross build."""
    return bool((config_settings or {}).get("cmake.define.PLN_TORCH_SITE"))


def _build_against_torch(build, wheel_directory, config_settings, metadata_directory):
    """Runs scikit-build-core's `build` (a wheel or an editable) against the
    environment's torch, removing the scratch folders it needed."""
    if _cross_build(config_settings):
        return build(wheel_directory, config_settings, metadata_directory)
    _, isolated = _find_torch()
    scratch: List[str] = []
    try:
        settings = _settings(config_settings, _torch_python(isolated, scratch))
        return build(wheel_directory, settings, metadata_directory)
    finally:
        for folder in scratch:
            shutil.rmtree(folder, ignore_errors=True)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _build_against_torch(_skbuild.build_wheel, wheel_directory, config_settings, metadata_directory)


def get_requires_for_build_sdist(config_settings=None) -> List[str]:
    return _skbuild.get_requires_for_build_sdist(config_settings)


def build_sdist(sdist_directory, config_settings=None):
    return _skbuild.build_sdist(sdist_directory, config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _skbuild.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def get_requires_for_build_editable(config_settings=None) -> List[str]:
    _find_torch()
    return _skbuild.get_requires_for_build_editable(config_settings)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _build_against_torch(_skbuild.build_editable, wheel_directory, config_settings, metadata_directory)
