// The fused CPU kernels alone (src/cpu/kernels.h: no dispatcher, autograd or
// allocation), against memcpy of the input, on the benchmark shapes and on
// the same shapes cut to fit in L2, where the time a kernel takes is its
// arithmetic. Buffers are 64-byte aligned and reused; the kernels and the
// copy run in alternation (pln::bench::min_ms), min of N rounds.
// PLN_CPU_CAPABILITY picks the kernels as for the library. The copy uses the
// same threads. ns/value: the time per value and thread of the forward (no
// statistics) and the backward, their cost in core time.
//
//   pln_bench_kernels [--reps N] [--threads 1,2]

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "timing.h"

namespace {

using pln::cpu::Geometry;

struct Shape {
  std::string name;
  Geometry geometry;
};

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], AlignedFree>;

Buffer aligned(size_t n, float value = 0.f) {
  const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  Buffer b(static_cast<float*>(std::aligned_alloc(64, bytes)));
  std::fill(b.get(), b.get() + n, value);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 200;
  std::vector<int> threads = {1, 2};
  CLI::App app{"The fused CPU kernels alone against a copy, in L2 and from memory"};
  app.add_option("--reps", reps, "rounds, the minimum counts")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--threads", threads, "thread counts to time")
      ->delimiter(',')->check(CLI::Range(1, 4096))->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  // Geometry: {outer, channels, inner, group}.
  const std::vector<Shape> shapes = {
      {"MLP    [4096,512] g=8", {4096, 512, 1, 8}},
      {"tokens [128,65,384] g=8", {128 * 65, 384, 1, 8}},
      {"NCHW   [128,64,32,32] g=16", {128, 64, 1024, 16}},
      {"MLP    [128,512] g=8 (L2)", {128, 512, 1, 8}},
      {"NCHW   [4,64,32,32] g=16 (L2)", {4, 64, 1024, 16}},
  };
  fmt::print("pln_bench_kernels: kernels {}, float32, centring, affine, min of {} rounds; "
             "ratios to a memcpy of the input (1.0 is the floor)\n\n",
             pln::cpu::capability(), reps);
  fmt::print("{:<31} {:>3} | {:>9} {:>9} {:>9} {:>9} | {:>7} {:>7} {:>7} | {:>12}\n", "shape", "thr",
             "fwd ms", "fwd+stat", "bwd ms", "copy ms", "fwd", "fwd+st", "bwd", "ns/value f b");
  for (const auto& s : shapes) {
    const Geometry& g = s.geometry;
    const size_t n = static_cast<size_t>(g.numel()), ns = static_cast<size_t>(g.num_stats());
    Buffer x = aligned(n), dy = aligned(n), y = aligned(n), dx = aligned(n), copy = aligned(n);
    Buffer mean = aligned(ns), rstd = aligned(ns);
    Buffer w = aligned(static_cast<size_t>(g.channels), 1.1f), b = aligned(static_cast<size_t>(g.channels), 0.1f);
    std::vector<double> dw(static_cast<size_t>(g.channels)), db(static_cast<size_t>(g.channels));
    std::mt19937 gen(0);
    std::normal_distribution<float> normal;
    for (size_t i = 0; i < n; ++i) x[i] = normal(gen), dy[i] = normal(gen);
    for (int t : threads) {
      at::set_num_threads(t);
      const auto ms = pln::bench::min_ms(
          {[&] { pln::cpu::forward<float>(g, x.get(), w.get(), b.get(), y.get(), nullptr, nullptr, 1e-5, true); },
           [&] { pln::cpu::forward<float>(g, x.get(), w.get(), b.get(), y.get(), mean.get(), rstd.get(), 1e-5, true); },
           [&] {
             pln::cpu::backward<float>(g, dy.get(), x.get(), mean.get(), rstd.get(), w.get(), true, dx.get(),
                                       dw.data(), db.data());
           },
           [&] {
             at::parallel_for(0, int64_t(n), 1 << 16, [&](int64_t begin, int64_t end) {
               std::memcpy(copy.get() + begin, x.get() + begin, size_t(end - begin) * sizeof(float));
             });
           }},
          reps);
      const double per_value = 1e6 * t / double(n);
      fmt::print("{:<31} {:>3} | {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} | {:>7.2f} {:>7.2f} {:>7.2f} | {:>5.3f} {:>5.3f}\n",
                 s.name, t, ms[0], ms[1], ms[2], ms[3], ms[0] / ms[3], ms[1] / ms[3], ms[2] / ms[3],
                 ms[0] * per_value, ms[2] * per_value);
    }
  }
  return 0;
}
