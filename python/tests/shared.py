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


def mamba2_gated_norm():
    """transformers' Mamba-2 gated norm class, under the name this version gives it
    (MambaRMSNormGated, renamed Mamba2RMSNormGated in transformers 5.25)."""
    from transformers.models.mamba2 import modeling_mamba2
    for name in ("Mamba2RMSNormGated", "MambaRMSNormGated"):
        if hasattr(modeling_mamba2, name):
            return getattr(modeling_mamba2, name)
    raise ImportError("transformers.models.mamba2 has neither Mamba2RMSNormGated nor MambaRMSNormGated")


def randomise(module, seed=0):
    """Sets every parameter of `module` to seeded values in [0.5, 1.5)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.rand(p.shape, generator=gen, dtype=p.dtype) + 0.5)
    return module


def reference(x, g, weight=None, bias=None, eps=1e-5, centering=True, p=2.0, q=None, axis=-1):
    """An independent statement of the formula, in float64: features moved last, grouped."""
    x64 = x.double().movedim(axis, -1)
    shape = x64.shape
    xg = x64.reshape(*shape[:-1], shape[-1] // g, g)
    # Shifted by a value of the group first (exact for close values), so that
    # the reference itself does not round at a common offset's magnitude.
    shifted = xg - xg[..., :1].detach()
    xc = shifted - shifted.mean(-1, keepdim=True) if centering else xg
    # Powers written so that autograd's derivatives are right where a centred
    # value is exactly 0 (abs and sign have derivative 0 there): |x|^p as x^p
    # for even p, sign(x) |x| as x.
    stat = (xc ** p if p % 2 == 0 else xc.abs() ** p).mean(-1, keepdim=True)
    if q is None:
        y = xc / (stat + eps) ** (1 / p)
    else:
        num = xc if p == q else xc.sign() * xc.abs() ** (p / q)
        y = num / (stat + eps) ** (1 / q)
    y = y.reshape(shape)
    if weight is not None:
        y = y * weight.double()
    if bias is not None:
        y = y + bias.double()
    return y.movedim(-1, axis).to(x.dtype)


def run_python(code, cwd, env_extra=None, clean=True):
    """Runs `code` in a fresh interpreter; clean: without PLN_LIBRARY and PYTHONPATH."""
    env = dict(os.environ)
    if clean:
        env.pop("PLN_LIBRARY", None)
        env.pop("PYTHONPATH", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
