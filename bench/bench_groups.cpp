// Parallel LN across group sizes, on the widths of real models: GPT-2's 768,
// Llama's 4096 and the 5120 channels of a Mamba-2 2.7B mixer (d_inner, whose
// gated norm takes groups of d_inner / n_groups), from g = 1 to the full width.
// Each line times, in alternation (pln::bench::min_ms), the public op
// (pln::functional::parallel_ln), ATen's layer_norm over the same features
// (the LayerNorm a converted model had), and a copy of the input (the memory
// floor), forward alone (no autograd) and forward+backward (through
// autograd, as in training); in cache (a 4 MiB tensor) and out of it (96 MiB,
// three times a 32 MiB L3); at each thread count. Ratios to the copy and to
// layer_norm are printed; --csv writes every time for docs/performance.md's
// figure (scripts/plot-groups).
//
// --only few times a few rows of one large group instead (the split groups).
//
//   pln_bench_groups [--reps N] [--threads 1,2] [--quick] [--csv FILE] [--only nc|nchw|few]
//                    [--groups 8,16]

#include <pln/pln.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/format.h>

#include "timing.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace {

using pln::bench::min_ms;

struct Case {
  std::string layout;  // nc: [rows, C]; nchw: [rows, C, 8, 8]
  int64_t width;
  int64_t g;
  std::string cache;  // in | out
  int64_t rows;
};

constexpr int64_t kInCacheBytes = int64_t(4) << 20;
constexpr int64_t kOutOfCacheBytes = int64_t(96) << 20;
constexpr int64_t kPlane = 64;  // NCHW positions per image (8 x 8)

std::vector<Case> cases(bool quick) {
  std::vector<Case> out;
  const std::vector<int64_t> sweep = {1, 4, 8, 16, 32, 64, 128, 256, 768};
  const auto add = [&](const std::string& layout, int64_t width, std::vector<int64_t> groups) {
    groups.push_back(width);
    std::sort(groups.begin(), groups.end());
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    for (const char* cache : {"in", "out"}) {
      if (quick && std::string(cache) == "out") continue;
      const int64_t bytes = quick ? (int64_t(256) << 10) : std::string(cache) == "in" ? kInCacheBytes : kOutOfCacheBytes;
      const int64_t per_row = width * (layout == "nchw" ? kPlane : 1) * int64_t(sizeof(float));
      for (int64_t g : groups) {
        if (width % g == 0) out.push_back({layout, width, g, cache, std::max<int64_t>(1, bytes / per_row)});
      }
    }
  };
  add("nc", 768, sweep);
  if (!quick) {
    add("nc", 4096, sweep);
    std::vector<int64_t> mamba = sweep;
    mamba.push_back(640);  // n_groups = 8
    add("nc", 5120, mamba);
  }
  add("nchw", 768, sweep);
  return out;
}

// A few rows of one large group (--only few): whether every thread takes part
// when the groups are fewer than the threads (src/cpu/kernels.cpp, split groups).
std::vector<Case> few_rows() {
  std::vector<Case> out;
  for (const auto& [rows, width] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 8192}, {4, 4096}, {1, 16384}, {1, 32768}, {1, 65536}, {1, 262144}, {2, 262144}, {1, 1 << 20}, {1, 1 << 22}}) {
    out.push_back({"nc", width, width, "few", rows});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // Keep freed blocks in the heap (see bench_parallel_ln.cpp): page faults of
  // fresh mmaps would swamp what is measured.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  int reps = 10;
  bool quick = false;
  std::string csv_path, only;
  std::vector<int> threads = {1, 2};
  std::vector<int64_t> groups;
  CLI::App app{"Parallel LN across group sizes against layer_norm and a copy"};
  app.add_option("--reps", reps, "runs at least, the minimum counts")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--threads", threads, "thread counts to time")
      ->delimiter(',')->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_flag("--quick", quick, "small shapes, width 768 only, at most 3 runs (a test)");
  app.add_option("--csv", csv_path, "also write every time to this CSV file");
  app.add_option("--only", only, "one layout (nc or nchw), or few: a few rows of one large group")
      ->check(CLI::IsMember({"nc", "nchw", "few"}));
  app.add_option("--groups", groups, "time these group sizes only (of the sweep's)")
      ->delimiter(',')->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (quick) reps = std::min(reps, 3);
  const std::vector<Case> sweep = only == "few" ? few_rows() : cases(quick);
  for (const int64_t g : groups) {
    if (std::none_of(sweep.begin(), sweep.end(), [&](const Case& c) { return c.g == g; })) {
      std::vector<int64_t> known;
      for (const Case& c : sweep) {
        if (std::find(known.begin(), known.end(), c.g) == known.end()) known.push_back(c.g);
      }
      fmt::print(stderr, "pln_bench_groups: --groups {}: not a group size of the sweep ({})\n", g,
                 fmt::join(known, ", "));
      return 2;
    }
  }
  std::ofstream csv;
  if (!csv_path.empty()) {
    csv.open(csv_path);
    if (!csv) {
      fmt::print(stderr, "pln_bench_groups: cannot write '{}'\n", csv_path);
      return 2;
    }
    csv << "layout,width,g,rows,cache,threads,pln_fwd_ms,ln_fwd_ms,copy_ms,pln_fwdbwd_ms,ln_fwdbwd_ms\n";
  }
  fmt::print("pln_bench_groups: LibTorch {}, kernels: {}, float32, affine, min of >= {} runs\n", TORCH_VERSION,
             pln::cpu_kernels(), reps);
  fmt::print("ratios: /copy is the cost over a copy of the input (1.0 is the floor); "
             "/LN is to ATen's layer_norm over the same features (below 1.0 is faster)\n\n");
  fmt::print("{:<5} {:>5} {:>5} {:>6} {:>3} {:>3} | {:>8} {:>8} {:>8} | {:>8} {:>8} | {:>6} {:>6} | {:>6} {:>6}\n",
             "lay", "C", "g", "rows", "mem", "thr", "fwd ms", "LN fwd", "copy", "f+b ms", "LN f+b", "f/copy",
             "f/LN", "fb/cp", "fb/LN");
  for (const Case& c : sweep) {
    if (!only.empty() && only != "few" && c.layout != only) continue;
    if (!groups.empty() && std::find(groups.begin(), groups.end(), c.g) == groups.end()) continue;
    torch::manual_seed(0);
    const bool nchw = c.layout == "nchw";
    const std::vector<int64_t> sizes = nchw ? std::vector<int64_t>{c.rows, c.width, 8, 8}
                                            : std::vector<int64_t>{c.rows, c.width};
    const torch::Tensor x = torch::randn(sizes), dy = torch::randn(sizes);
    // layer_norm's features are last: an NCHW input's channels-last twin.
    const torch::Tensor x_ln = nchw ? x.permute({0, 2, 3, 1}).contiguous() : x;
    const torch::Tensor dy_ln = nchw ? dy.permute({0, 2, 3, 1}).contiguous() : dy;
    const torch::Tensor w = torch::rand({c.width}) + 0.5, b = torch::randn({c.width});
    const auto options = pln::ParallelLNOptions(c.width, c.g).dim(nchw ? 4 : 2);
    torch::Tensor copy = torch::empty_like(x);
    const auto forward = [&](const torch::Tensor& xi, const torch::Tensor& wi, const torch::Tensor& bi) {
      return pln::functional::parallel_ln(xi, options, wi, bi);
    };
    const auto layer_norm = [&](const torch::Tensor& xi, const torch::Tensor& wi, const torch::Tensor& bi) {
      return torch::layer_norm(xi, {c.width}, wi, bi);
    };
    // One timed call: the forward under NoGradGuard, or forward and backward of fresh leaves.
    const auto inference = [&](auto f, const torch::Tensor& xi) -> std::function<void()> {
      return [&, f] {
        torch::NoGradGuard guard;
        f(xi, w, b);
      };
    };
    const auto training = [&](auto f, const torch::Tensor& xi, const torch::Tensor& dyi) -> std::function<void()> {
      return [&, f] {
        const auto xg = xi.detach().requires_grad_();
        const auto wg = w.detach().requires_grad_(), bg = b.detach().requires_grad_();
        f(xg, wg, bg).backward(dyi);
      };
    };
    for (int t : threads) {
      torch::set_num_threads(t);
      const auto ms = min_ms({inference(forward, x), inference(layer_norm, x_ln), [&] { copy.copy_(x); },
                              training(forward, x, dy), training(layer_norm, x_ln, dy_ln)},
                             reps, quick ? 20 : 300);
      fmt::print("{:<5} {:>5} {:>5} {:>6} {:>3} {:>3} | {:>8.3f} {:>8.3f} {:>8.3f} | {:>8.3f} {:>8.3f} | {:>6.2f} "
                 "{:>6.2f} | {:>6.2f} {:>6.2f}\n",
                 c.layout, c.width, c.g, c.rows, c.cache, t, ms[0], ms[1], ms[2], ms[3], ms[4], ms[0] / ms[2],
                 ms[0] / ms[1], ms[3] / ms[2], ms[3] / ms[4]);
      if (csv.is_open()) {
        csv << fmt::format("{},{},{},{},{},{},{:.5f},{:.5f},{:.5f},{:.5f},{:.5f}\n", c.layout, c.width, c.g, c.rows,
                           c.cache, t, ms[0], ms[1], ms[2], ms[3], ms[4])
            << std::flush;
      }
    }
  }
  return 0;
}
