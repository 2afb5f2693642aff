"""Accuracy of the fused op at a common offset: float32 input x = a + 0.1 * randn.

Each figure is max |error| / max |reference|, against float64 computed from the
same float32 values shifted back exactly (x - a), for the output, dx and
dweight of the fused op, and the output of ATen's layer_norm on the same
groups for comparison. The tests (OffsetParity in tests/test_parity.cpp) hold
the fused op to these at every capability; this prints them.

    python bench/accuracy_offset.py [--threads N]
"""
import argparse

import torch

import pln  # noqa: F401  (registers torch.ops.pln)


def reference(x0, a, w, b, C, g, nchw):
    xr = (x0.double() - a).requires_grad_()
    wr = w.double().requires_grad_()
    t = xr.movedim(1, -1) if nchw else xr
    shape = t.shape
    t = t.reshape(-1, C // g, g)
    t = t - t.mean(2, keepdim=True)
    y = (t / (t.pow(2).mean(2, keepdim=True) + 1e-5).sqrt()).reshape(shape)
    if nchw:
        y = y.movedim(-1, 1) * wr.view(1, -1, 1, 1) + b.double().view(1, -1, 1, 1)
    else:
        y = y * wr + b.double()
    return xr, wr, y


def relative(got, want):
    return ((got.double() - want).abs().max() / want.abs().max()).item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, float32, relative errors (max |err| / max |ref|)")
    print(f"{'shape':26s} {'offset':>8s} | {'y':>8s} {'dx':>8s} {'dweight':>8s} | {'ATen LN y':>9s}")
    for name, shape, C, g, layout in [("[512,64] g=8", (512, 64), 64, 8, "nc"),
                                      ("NCHW [8,32,16,16] g=8", (8, 32, 16, 16), 32, 8, "nchw")]:
        nchw = layout == "nchw"
        for a in [0.0, 1e2, 1e4]:
            torch.manual_seed(0)
            x0 = (a + 0.1 * torch.randn(shape, dtype=torch.float64)).float()
            w, b, dy = torch.rand(C) + 0.5, torch.randn(C), torch.randn(shape)
            x, wg = x0.clone().requires_grad_(), w.clone().requires_grad_()
            y = torch.ops.pln.parallel_ln(x, wg, b, C, g, 1e-5, True, layout, 2.0)
            y.backward(dy)
            xr, wr, yr = reference(x0, a, w, b, C, g, nchw)
            yr.backward(dy.double())
            grouped = (x0.movedim(1, -1) if nchw else x0).reshape(-1, C // g, g)
            ln = torch.layer_norm(grouped, (g,))
            ln_ref = torch.layer_norm(grouped.double() - a, (g,))
            print(f"{name:26s} {a:8g} | {relative(y, yr):8.1e} {relative(x.grad, xr.grad):8.1e} "
                  f"{relative(wg.grad, wr.grad):8.1e} | {relative(ln, ln_ref):9.1e}")


if __name__ == "__main__":
    main()
