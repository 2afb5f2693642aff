"""Helpers shared by the pytest suites."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
TORCH = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])


def needs_torch(major, minor, what="needs"):
    """A skip mark for a torch older than major.minor, naming the version found."""
    return pytest.mark.skipif(TORCH < (major, minor),
                              reason=f"{what} PyTorch {major}.{minor} or later, this is {torch.__version__}")


needs_torch2 = needs_torch(2, 6)


def randomise(module, seed=0):
    """Sets every parameter of `module` to seeded values in [0.5, 1.5)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.rand(p.shape, generator=gen, dtype=p.dtype) + 0.5)
    return module


def run_python(code, cwd, env_extra=None, clean=True):
    """Runs `code` in a fresh interpreter; clean: without PLN_LIBRARY and PYTHONPATH."""
    env = dict(os.environ)
    if clean:
        env.pop("PLN_LIBRARY", None)
        env.pop("PYTHONPATH", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
