"""Helpers shared by the pytest suites."""
import torch


def randomise(module, seed=0):
    """Sets every parameter of `module` to seeded values in [0.5, 1.5)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.rand(p.shape, generator=gen, dtype=p.dtype) + 0.5)
    return module
