// Side-by-side timings of Parallel LN on the three reference shapes and two
// larger than a last-level cache (where the copy, and a fused op, run at
// memory bandwidth rather than at the cache's or the FP units'), printed as
// ratios from one run: the fused kernels, the composed ATen ops of the original
// module, torch::layer_norm on the grouped view (plus permutes and affine), and
// a plain copy of the input (the memory-bound floor). Min of N repetitions;
// the fused op and the copy run in alternation, so that their ratio is
// measured over the same stretch of time.
//
//   pln_bench [--reps N] [--threads 1,2] [--quick] [--only TEXT]
//
// --only keeps the shapes whose name contains TEXT (for profiling one shape).

#include <pln/pln.h>
#include <pln/testing.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "timing.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

using pln::bench::min_ms;

struct Shape {
  std::string name;
  std::vector<int64_t> sizes;
  int64_t C, g;
  int64_t dim;
};

// layer_norm over each group of g features: features-last view, reshape to
// [-1, g], layer_norm, then back, then the per-feature affine.
torch::Tensor grouped_layer_norm(const torch::Tensor& x, const Shape& s, const torch::Tensor& w,
                                 const torch::Tensor& b) {
  torch::Tensor t = s.dim == 4 ? x.permute({0, 2, 3, 1}) : x;
  const auto sizes = t.sizes().vec();
  t = torch::layer_norm(t.reshape({-1, s.g}), {s.g}).reshape(sizes);
  if (s.dim == 4) {
    t = t.permute({0, 3, 1, 2});
    return t * w.view({1, -1, 1, 1}) + b.view({1, -1, 1, 1});
  }
  return t * w + b;
}

}  // namespace

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // Keep freed blocks in the heap: otherwise every large tensor is a fresh
  // mmap whose page faults (costly on virtual machines) swamp the arithmetic
  // and make the many-temporaries composed reference look far slower than it is.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  const char* allocator = "glibc malloc, no mmap/trim of freed blocks";
#else
  const char* allocator = "system allocator";
#endif
  int reps = 10;
  bool quick = false;
  std::string only;
  std::vector<int> threads = {1, 2};
  CLI::App app{"Side-by-side timings of the fused op, the composed ops, layer_norm and a copy"};
  app.add_option("--reps", reps, "runs at least, the minimum counts")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--threads", threads, "thread counts to time")
      ->delimiter(',')->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_flag("--quick", quick, "small shapes and at most 3 runs (a test)");
  app.add_option("--only", only, "keep the shapes whose name contains this");
  CLI11_PARSE(app, argc, argv);
  std::vector<Shape> shapes = {
      {"MLP    [4096,512] g=8", {4096, 512}, 512, 8, 2},
      {"tokens [128,65,384] g=8", {128, 65, 384}, 384, 8, 3},
      {"NCHW   [128,64,32,32] g=16", {128, 64, 32, 32}, 64, 16, 4},
      // 128 MiB and 98 MiB a tensor: four and three times a 32 MiB L3.
      {"MLP    [65536,512] g=8", {65536, 512}, 512, 8, 2},
      {"tokens [1024,65,384] g=8", {1024, 65, 384}, 384, 8, 3},
  };
  if (quick) {
    shapes = {{"MLP    [512,512] g=8", {512, 512}, 512, 8, 2},
              {"tokens [16,65,384] g=8", {16, 65, 384}, 384, 8, 3},
              {"NCHW   [8,64,32,32] g=16", {8, 64, 32, 32}, 64, 16, 4}};
    reps = std::min(reps, 3);
  }
  shapes.erase(std::remove_if(shapes.begin(), shapes.end(),
                              [&](const Shape& s) { return s.name.find(only) == std::string::npos; }),
               shapes.end());
  if (shapes.empty()) {
    fmt::print(stderr, "pln_bench: no shape's name contains '{}'\n", only);
    return 2;
  }
  const char* blas_core = std::getenv("OPENBLAS_CORETYPE");
  fmt::print("pln_bench: LibTorch {}, kernels: {}, min of >= {} runs, float32, affine, {}{}\n",
             TORCH_VERSION, pln::cpu_kernels(), reps, allocator,
             blas_core ? fmt::format(", OPENBLAS_CORETYPE={}", blas_core) : "");
  fmt::print("ratios: composed/fused and layer_norm/fused are speed-ups (higher is better); "
             "fused/copy is the cost over a plain copy (1.0 is the floor)\n\n");
  fmt::print("{:<28} {:>3} {:>8} | {:>9} {:>9} {:>9} {:>9} | {:>8} {:>8} {:>8}\n", "shape",
             "thr", "pass", "fused ms", "composed", "ln-view", "copy", "comp/fus",
             "ln/fused", "fus/copy");
  for (const auto& s : shapes) {
    torch::manual_seed(0);
    const torch::Tensor x = torch::randn(s.sizes);
    const torch::Tensor dy = torch::randn(s.sizes);
    const auto options = pln::ParallelLNOptions(s.C, s.g).dim(s.dim);
    const torch::Tensor w = torch::rand({s.C}) + 0.5, b = torch::randn({s.C});
    for (int t : threads) {
      torch::set_num_threads(t);
      for (bool backward : {false, true}) {
        const double budget = quick ? 50 : 600;
        // One call of f as this pass times it: under NoGradGuard, or with the
        // backward of fresh leaves.
        auto pass = [&](auto f) -> std::function<void()> {
          if (!backward) {
            return [&, f] {
              torch::NoGradGuard guard;
              f(x, w, b);
            };
          }
          return [&, f] {
            const auto xg = x.detach().requires_grad_();
            const auto wg = w.detach().requires_grad_(), bg = b.detach().requires_grad_();
            f(xg, wg, bg).backward(dy);
          };
        };
        const auto fused_and_copy = min_ms(
            {pass([&](const auto& xi, const auto& wi, const auto& bi) {
               return pln::functional::parallel_ln(xi, options, wi, bi);
             }),
             [&] { (void)x.clone(); }},
            reps, budget);
        const double fused = fused_and_copy[0], copy = fused_and_copy[1];
        const double composed = min_ms({pass([&](const auto& xi, const auto& wi, const auto& bi) {
                                          return pln::detail::parallel_ln_composite(xi, options, wi, bi);
                                        })},
                                       reps, budget)[0];
        const double ln = min_ms({pass([&](const auto& xi, const auto& wi, const auto& bi) {
                                    return grouped_layer_norm(xi, s, wi, bi);
                                  })},
                                 reps, budget)[0];
        fmt::print("{:<28} {:>3} {:>8} | {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} | {:>8.1f} {:>8.1f} {:>8.2f}\n",
                   s.name, t, backward ? "fwd+bwd" : "fwd", fused, composed, ln, copy,
                   composed / fused, ln / fused, fused / copy);
      }
    }
  }
  return 0;
}
