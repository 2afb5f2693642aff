// Side-by-side timings of Parallel LN on the three reference shapes, printed as
// ratios from one run: the fused kernels, the composed ATen ops of the original
// module, torch::layer_norm on the grouped view (plus permutes and affine), and
// a plain copy of the input (the memory-bound floor). Min of N repetitions.
//
//   pln_bench [--reps N] [--threads 1,2] [--quick] [--only TEXT]
//
// --only keeps the shapes whose name contains TEXT (for profiling one shape).

#include <pln/pln.h>
#include <pln/testing.h>
#include <torch/torch.h>

#include <fmt/core.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Shape {
  std::string name;
  std::vector<int64_t> sizes;
  int64_t C, g;
  int64_t dim;
};

double min_ms(const std::function<void()>& f, int reps, double budget_ms) {
  f();  // warm-up: first-touch allocations, thread pool start
  double best = 1e300, spent = 0;
  for (int r = 0; r < reps || (spent < budget_ms && r < 5 * reps); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ms);
    spent += ms;
    if (r + 1 >= reps && spent >= budget_ms) break;
  }
  return best;
}

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
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads.clear();
      for (const char* p = argv[++i]; *p;) {
        threads.push_back(std::max(1, std::atoi(p)));
        while (*p && *p != ',') ++p;
        if (*p == ',') ++p;
      }
    } else {
      fmt::print(stderr, "usage: {} [--reps N] [--threads 1,2] [--quick] [--only TEXT]\n", argv[0]);
      return 2;
    }
  }
  std::vector<Shape> shapes = {
      {"MLP    [4096,512] g=8", {4096, 512}, 512, 8, 2},
      {"tokens [128,65,384] g=8", {128, 65, 384}, 384, 8, 3},
      {"NCHW   [128,64,32,32] g=16", {128, 64, 32, 32}, 64, 16, 4},
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
        auto run = [&](auto&& f) {
          if (!backward) {
            return min_ms([&] {
              torch::NoGradGuard guard;
              f(x, w, b);
            }, reps, budget);
          }
          return min_ms([&] {
            const auto xg = x.detach().requires_grad_();
            const auto wg = w.detach().requires_grad_(), bg = b.detach().requires_grad_();
            f(xg, wg, bg).backward(dy);
          }, reps, budget);
        };
        const double fused = run([&](const auto& xi, const auto& wi, const auto& bi) {
          return pln::functional::parallel_ln(xi, options, wi, bi);
        });
        const double composed = run([&](const auto& xi, const auto& wi, const auto& bi) {
          return pln::detail::parallel_ln_composite(xi, options, wi, bi);
        });
        const double ln = run([&](const auto& xi, const auto& wi, const auto& bi) {
          return grouped_layer_norm(xi, s, wi, bi);
        });
        const double copy = min_ms([&] { (void)x.clone(); }, reps, budget);
        fmt::print("{:<28} {:>3} {:>8} | {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} | {:>8.1f} {:>8.1f} {:>8.2f}\n",
                   s.name, t, backward ? "fwd+bwd" : "fwd", fused, composed, ln, copy,
                   composed / fused, ln / fused, fused / copy);
      }
    }
  }
  return 0;
}
