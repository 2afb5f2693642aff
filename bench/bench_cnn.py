"""CNN training throughput (images/s), side by side in one run: `pln cnn`
against the same network in plain PyTorch with the original module's composed
PLN (dim=4, channel groups at every pixel): three stages of conv3x3 -> PLN(4)
with 16, 32, 64 channels, average pooling between stages, global pooling,
linear classifier; SGD with momentum, batches of 128 Fashion-MNIST-sized
images, float32, one thread (OPENBLAS_NUM_THREADS too). Each side trains two epochs
and is timed on the second.

    /usr/bin/python3 bench/bench_cnn.py [--width 16] [--threads 1] [--quick]
"""

from bench_common import (best_alternating, pln_last_epoch_rate, python_prelude, python_rate,
                          side_by_side_parser, side_by_side_setup)


def run_cpp(pln, width, images, threads, env):
    return pln_last_epoch_rate(
        [pln, "cnn", "--preset", "cpu", "--threads", threads, "--set", "norm=pln", "group=4", "act=none",
         f"width={width}", "depth=1", f"n_train={images}", "n_test=128", "epochs=2", "batch_size=128",
         "labels=clean"], images, env)


def run_python(width, images, threads, env):
    code = python_prelude(threads) + f"""
layers, channels = [], 1
for stage in range(3):
    if stage:
        layers.append(nn.AvgPool2d(2))
    out = {width} << stage
    layers += [nn.Conv2d(channels, out, 3, padding=1), OriginalParallelLN(out, 4, dim=4)]
    channels = out
net = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, 10))
x = torch.randn({images}, 1, 28, 28)
y = torch.randint(0, 10, ({images},))
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
def step(idx):
    opt.zero_grad(set_to_none=True)
    nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
    opt.step()
print(images_per_second(step, {images}))
"""
    return python_rate(code, env)


def main():
    parser = side_by_side_parser(__doc__, "few images (a test)")
    parser.add_argument("--width", type=int, default=16)
    args = parser.parse_args()
    env, repeats = side_by_side_setup(args, "bench_cnn")
    images = 256 if args.quick else 2048
    cpp, py = best_alternating(lambda: run_cpp(args.pln, args.width, images, args.threads, env),
                               lambda: run_python(args.width, images, args.threads, env), repeats)
    print(f"CNN training, PLN(4) width {args.width}, 3 stages, batch 128, 28x28 images, float32, "
          f"{args.threads} thread(s), best of {repeats} runs per side")
    print(f"{'pln images/s':>13} {'PyTorch images/s':>17} {'ratio':>7}")
    print(f"{cpp:>13.1f} {py:>17.1f} {cpp / py:>6.1f}x")


if __name__ == "__main__":
    main()
