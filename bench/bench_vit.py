"""ViT training throughput (images/s), side by side in one run: `pln vit`
against the same micro ViT in plain PyTorch with the original module's composed
PLN (bench/vit_reference.py): 128 wide (--width), 4 blocks, 4 heads, patch 7 on 28 x 28
images (17 tokens), PLN(8) at every norm site, GELU, AdamW, gradient clipping,
batches of 128, float32, one thread (OPENBLAS_NUM_THREADS too). Each side trains two epochs
and is timed on the second.

    /usr/bin/python3 bench/bench_vit.py [--width 128] [--group 8] [--threads 1] [--quick]
"""

from bench_common import (best_alternating, pln_last_epoch_rate, python_prelude, python_rate,
                          side_by_side_parser, side_by_side_setup)


def run_cpp(pln, width, group, images, threads, env):
    return pln_last_epoch_rate(
        [pln, "vit", "--preset", "cpu", "--threads", threads, "--set", "norm=pln", f"width={width}",
         f"group={group}", "act=gelu", f"n_train={images}", "n_test=128", "epochs=2", "batch_size=128",
         "labels=clean", "clip_grad=1"], images, env)


def run_python(width, group, images, threads, env):
    code = python_prelude(threads) + f"""
from vit_reference import VisionTransformer, optimizer
net = VisionTransformer(width={width}, group={group})
opt = optimizer(net)
x = torch.randn({images}, 1, 28, 28)
y = torch.randint(0, 10, ({images},))
def step(idx):
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    opt.step()
print(images_per_second(step, {images}))
"""
    return python_rate(code, env)


def main():
    parser = side_by_side_parser(__doc__, "few images (a test)")
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--group", type=int, default=8)
    args = parser.parse_args()
    env, repeats = side_by_side_setup(args, "bench_vit")
    images = 256 if args.quick else 2048
    cpp, py = best_alternating(lambda: run_cpp(args.pln, args.width, args.group, images, args.threads, env),
                               lambda: run_python(args.width, args.group, images, args.threads, env), repeats)
    print(f"micro ViT training, PLN({args.group}) at every norm site, {args.width} wide, 4 blocks, 17 tokens, batch 128, "
          f"float32, {args.threads} thread(s), best of {repeats} runs per side")
    print(f"{'pln images/s':>13} {'PyTorch images/s':>17} {'ratio':>7}")
    print(f"{cpp:>13.1f} {py:>17.1f} {cpp / py:>6.1f}x")


if __name__ == "__main__":
    main()
