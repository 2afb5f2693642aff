// A kernel's bits are fixed by its own code, not by which sources are
// compiled together: the kernels compiled as one translation unit
// (kernels/grouped.cpp) give the library's bits, source by source, for
// every dtype, a small, mid and large group size, both layouts' paths, the
// gated norm and the jets.

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cstring>
#include <string>
#include <vector>

#include "cpu/gated_kernels.h"
#include "cpu/jet_kernels.h"
#include "cpu/kernels.h"

namespace pln::cpu {
namespace grouped {
template <typename S>
void forward(const Geometry& g, const S* x, const compute_t<S>* weight, const compute_t<S>* bias, S* y,
             compute_t<S>* mean, compute_t<S>* rstd, double eps, bool centering);
template <typename S>
void backward(const Geometry& g, const S* dy, const S* x, const compute_t<S>* mean, const compute_t<S>* rstd,
              const compute_t<S>* weight, bool centering, S* dx, double* dweight, double* dbias);
template <typename S>
void gated_forward(const gated::Shape& s, const S* x, const S* z, const compute_t<S>* weight,
                   const compute_t<S>* bias, S* y, compute_t<S>* mean, compute_t<S>* rstd);
template <typename S>
void jet_forward(const JetGeometry& g, const S* x, S* y, double eps, bool centering);
template <typename S>
void jet_backward(const JetGeometry& g, const S* dy, const S* x, S* dx, double eps, bool centering);
}  // namespace grouped
// The library's compilation of the capability grouped.cpp is compiled for,
// and whether this CPU runs it.
#if defined(__aarch64__)
namespace library = neon;
inline bool capability_runs() { return true; }
#else
namespace library = avx2;
inline bool capability_runs() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}
#endif
}  // namespace pln::cpu

namespace pln::test {
namespace {

// n random values around 1 of type S.
template <typename S>
std::vector<S> values(int64_t n) {
  const auto t = torch::randn({n}).mul_(3).add_(1);
  std::vector<S> out(static_cast<size_t>(n));
  const float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = cpu::narrow<S>(static_cast<cpu::compute_t<S>>(p[i]));
  return out;
}

template <typename V>
bool same_bytes(const std::vector<V>& a, const std::vector<V>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(V)) == 0;
}

template <typename S>
void compare_norms(const cpu::Geometry& g) {
  using T = cpu::compute_t<S>;
  torch::manual_seed(7);
  const int64_t n = g.numel(), stats = g.num_stats();
  const auto x = values<S>(n), dy = values<S>(n);
  const auto w = values<T>(g.channels), b = values<T>(g.channels);
  for (bool centering : {true, false}) {
    std::vector<S> y1(n), y2(n), dx1(n), dx2(n);
    std::vector<T> m1(stats), m2(stats), r1(stats), r2(stats);
    std::vector<double> dw1(g.channels), dw2(g.channels), db1(g.channels), db2(g.channels);
    cpu::library::forward(g, x.data(), w.data(), b.data(), y1.data(), m1.data(), r1.data(), 1e-5, centering);
    cpu::grouped::forward(g, x.data(), w.data(), b.data(), y2.data(), m2.data(), r2.data(), 1e-5, centering);
    EXPECT_TRUE(same_bytes(y1, y2) && same_bytes(m1, m2) && same_bytes(r1, r2)) << "forward, centering " << centering;
    cpu::library::backward(g, dy.data(), x.data(), m1.data(), r1.data(), w.data(), centering, dx1.data(), dw1.data(),
                      db1.data());
    cpu::grouped::backward(g, dy.data(), x.data(), m1.data(), r1.data(), w.data(), centering, dx2.data(), dw2.data(),
                      db2.data());
    EXPECT_TRUE(same_bytes(dx1, dx2) && same_bytes(dw1, dw2) && same_bytes(db1, db2))
        << "backward, centering " << centering;
  }
}

TEST(KernelGrouping, NormsGiveTheSameBitsCompiledTogether) {
  if (!cpu::capability_runs()) GTEST_SKIP() << "this CPU lacks the capability the grouped kernels are compiled for";
  // outer, C, inner, g: groups of 4, 8 (every layout's small-group paths), 64 and 768.
  const std::vector<cpu::Geometry> shapes = {{5, 136, 1, 4}, {7, 384, 1, 8}, {3, 256, 1, 32}, {4, 768, 1, 64},
                                        {2, 768, 1, 768}, {2, 48, 37, 4}, {2, 48, 37, 8}, {2, 128, 19, 64}};
  for (const cpu::Geometry& g : shapes) {
    SCOPED_TRACE("C " + std::to_string(g.channels) + " inner " + std::to_string(g.inner) + " g " +
                 std::to_string(g.group));
    compare_norms<float>(g);
    compare_norms<double>(g);
    compare_norms<cpu::bfloat16>(g);
    compare_norms<cpu::float16>(g);
  }
}

TEST(KernelGrouping, GatedNormAndJetsGiveTheSameBitsCompiledTogether) {
  if (!cpu::capability_runs()) GTEST_SKIP() << "this CPU lacks the capability the grouped kernels are compiled for";
  torch::manual_seed(8);
  for (int64_t group : {8, 64}) {
    const cpu::gated::Shape s{6, 256, group, 1e-5, true, group == 8, group == 64};
    const auto x = values<float>(6 * 256), z = values<float>(6 * 256), w = values<float>(256),
               b = values<float>(256);
    std::vector<float> y1(x.size()), y2(x.size()), m1(6 * 256 / group), m2(m1.size()), r1(m1.size()),
        r2(m1.size());
    cpu::library::gated_forward(s, x.data(), z.data(), w.data(), b.data(), y1.data(), m1.data(), r1.data());
    cpu::grouped::gated_forward(s, x.data(), z.data(), w.data(), b.data(), y2.data(), m2.data(), r2.data());
    EXPECT_TRUE(same_bytes(y1, y2) && same_bytes(m1, m2) && same_bytes(r1, r2)) << "gated norm, g " << group;
  }
  for (int64_t group : {4, 12}) {
    const cpu::JetGeometry g{37, 48, group, 2};
    const int64_t n = g.parts() * g.rows * g.channels;
    const auto x = values<double>(n), dy = values<double>(n);
    std::vector<double> y1(n), y2(n), dx1(n), dx2(n);
    cpu::library::jet_forward(g, x.data(), y1.data(), 1e-5, true);
    cpu::grouped::jet_forward(g, x.data(), y2.data(), 1e-5, true);
    cpu::library::jet_backward(g, dy.data(), x.data(), dx1.data(), 1e-5, true);
    cpu::grouped::jet_backward(g, dy.data(), x.data(), dx2.data(), 1e-5, true);
    EXPECT_TRUE(same_bytes(y1, y2) && same_bytes(dx1, dx2)) << "jets, g " << group;
  }
}

}  // namespace
}  // namespace pln::test
