// The CUDA kernels (src/cuda/kernels.cu), run on the CPU through HIP-CPU:
// parity of pln::cuda::forward and pln::cuda::backward with a long-double
// reference in every layout, dtype and group size; misaligned, empty and
// many-row inputs; PLS; common offsets up to 1e4 (against the CPU kernels'
// own error too); bit-identical dweight/dbias over two runs. The gated norm's
// (src/cuda/gated.cu): parity with the CPU kernels (float64) for both gate
// positions, both activations, PLN and PLS, every dtype.
//
// What this suite cannot show (the GPU suite, python/tests/test_cuda.py run by
// scripts/device-check, keeps those checks): HIP-CPU ignores shuffle masks
// (a wrong mask passes here), runs a warp as 64 lanes (a shuffle that would
// cross a 32-lane warp is not caught), runs each block's threads one at a
// time as fibers (no data race, no missing __syncthreads shows), and makes
// every shuffle a barrier of the whole block; nor anything about speed,
// occupancy, registers or > 2^31-element tensors.
//
// Errors are max |got - reference| / max |reference| over a tensor.

#include "cuda/gated.h"
#include "cuda/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace pln::cuda::testing {
int null_stream_order_violations(int runs);  // tests/cuda/stream_order_hip_cpu.cpp
}

namespace {

using pln::cuda::Geometry;
using Real = long double;

// ------------------------------------------------------------ 16-bit types ---

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  const int32_t raw = (x >> 23) & 0xff, exp = raw - 127 + 15;
  if (raw == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    const uint32_t m = mant | 0x800000u;
    const int shift = 14 - exp;
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = sign | (uint32_t(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(h);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  const uint32_t x = exp == 31 ? sign | 0x7f800000u | (mant << 13) : sign | ((exp + 112) << 23) | (mant << 13);
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float bf16_to_float(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <typename T>
T to_elem(double v) {
  if constexpr (std::is_same_v<T, pln::cuda::half_t>) {
    return T{float_to_half(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, pln::cuda::bfloat16_t>) {
    return T{float_to_bf16(static_cast<float>(v))};
  } else {
    return static_cast<T>(v);
  }
}

template <typename T>
double from_elem(T v) {
  if constexpr (std::is_same_v<T, pln::cuda::half_t>) {
    return half_to_float(v.bits);
  } else if constexpr (std::is_same_v<T, pln::cuda::bfloat16_t>) {
    return bf16_to_float(v.bits);
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
const char* type_name() {
  if constexpr (std::is_same_v<T, pln::cuda::half_t>) return "float16";
  if constexpr (std::is_same_v<T, pln::cuda::bfloat16_t>) return "bfloat16";
  if constexpr (std::is_same_v<T, float>) return "float32";
  return "float64";
}

// --------------------------------------------------------------- reference ---

struct Reference {
  std::vector<Real> y, dx, dw, db, mean, rstd;
};

// [outer, C, inner] with groups of g channels, in long double.
Reference reference(const Geometry& g, const std::vector<double>& x, const std::vector<double>& w,
                    const std::vector<double>& b, const std::vector<double>& dy, double eps, bool centering) {
  Reference r;
  const int64_t groups = g.channels / g.group, n = g.numel();
  r.y.assign(n, 0), r.dx.assign(n, 0), r.dw.assign(g.channels, 0), r.db.assign(g.channels, 0);
  r.mean.assign(g.num_stats(), 0), r.rstd.assign(g.num_stats(), 0);
  for (int64_t o = 0; o < g.outer; ++o) {
    for (int64_t q = 0; q < groups; ++q) {
      for (int64_t i = 0; i < g.inner; ++i) {
        auto at = [&](int64_t j) { return (o * g.channels + q * g.group + j) * g.inner + i; };
        Real mu = 0;
        if (centering) {
          for (int64_t j = 0; j < g.group; ++j) mu += x[at(j)];
          mu /= g.group;
        }
        Real var = 0;
        for (int64_t j = 0; j < g.group; ++j) var += (x[at(j)] - mu) * (x[at(j)] - mu);
        const Real rs = 1 / std::sqrt(var / g.group + eps);
        Real mean_gy = 0, mean_gy_xhat = 0;
        for (int64_t j = 0; j < g.group; ++j) {
          const int64_t c = q * g.group + j;
          const Real xhat = (x[at(j)] - mu) * rs, gy = Real(dy[at(j)]) * w[c];
          r.y[at(j)] = xhat * w[c] + b[c];
          mean_gy += gy / g.group;
          mean_gy_xhat += gy * xhat / g.group;
          r.dw[c] += Real(dy[at(j)]) * xhat;
          r.db[c] += dy[at(j)];
        }
        if (!centering) mean_gy = 0;
        for (int64_t j = 0; j < g.group; ++j) {
          const int64_t c = q * g.group + j;
          const Real xhat = (x[at(j)] - mu) * rs, gy = Real(dy[at(j)]) * w[c];
          r.dx[at(j)] = rs * (gy - mean_gy - xhat * mean_gy_xhat);
        }
        r.mean[(o * groups + q) * g.inner + i] = mu;
        r.rstd[(o * groups + q) * g.inner + i] = rs;
      }
    }
  }
  return r;
}

// max |got - want| / max |want|; infinity when `got` holds a NaN (an unwritten value).
template <typename V>
double relative_error(const V& got, const std::vector<Real>& want) {
  Real worst = 0, scale = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    const Real v = static_cast<Real>(got[k]);
    if (std::isnan(static_cast<double>(v))) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::fabs(v - want[k]));
    scale = std::max(scale, std::fabs(want[k]));
  }
  return static_cast<double>(scale > 0 ? worst / scale : worst);
}

// ------------------------------------------------------------------- a case ---

struct Case {
  Geometry g;
  bool centering = true;
  double offset = 0;     // the inputs' common offset
  double scale = 1;      // and their spread
  int misalign = 0;      // elements by which x, y, dy, dx are shifted from their allocation
  uint32_t seed = 1;
  bool params = true;    // whether the backward computes dweight and dbias
  std::string name() const {
    char text[160];
    std::snprintf(text, sizeof text, "[%lld, %lld, %lld] g=%lld%s offset=%g%s", static_cast<long long>(g.outer),
                  static_cast<long long>(g.channels), static_cast<long long>(g.inner),
                  static_cast<long long>(g.group), centering ? "" : " PLS", offset,
                  misalign ? " misaligned" : "");
    return text;
  }
};

struct Errors {
  double y = 0, mean = 0, rstd = 0, dx = 0, dw = 0, db = 0;
};

struct Outcome {
  Errors cuda, cpu;  // cpu: the CPU kernels' errors (float32, float64 only)
  std::vector<double> dx, dw, db;  // the CUDA kernels' outputs
};

template <typename T>
Outcome run_case(const Case& k) {
  using A = typename pln::cuda::Acc<T>::type;
  const Geometry& g = k.g;
  const int64_t n = g.numel(), C = g.channels, stats = g.num_stats();
  const double eps = 1e-5;
  std::mt19937 rng(k.seed);
  std::normal_distribution<double> normal;
  // Inputs rounded to T first: the reference sees exactly what the kernels see.
  std::vector<T> xs(n + k.misalign), dys(n + k.misalign), ws(C), bs(C);
  std::vector<double> x(n), dy(n), w(C), b(C);
  for (int64_t i = 0; i < n; ++i) {
    xs[i + k.misalign] = to_elem<T>(k.offset + k.scale * normal(rng));
    x[i] = from_elem(xs[i + k.misalign]);
    dys[i + k.misalign] = to_elem<T>(normal(rng));
    dy[i] = from_elem(dys[i + k.misalign]);
  }
  for (int64_t c = 0; c < C; ++c) {
    ws[c] = to_elem<T>(1 + 0.5 * normal(rng));
    w[c] = from_elem(ws[c]);
    bs[c] = to_elem<T>(0.5 * normal(rng));
    b[c] = from_elem(bs[c]);
  }
  const Reference ref = reference(g, x, w, b, dy, eps, k.centering);

  const A nan = std::numeric_limits<A>::quiet_NaN();
  std::vector<T> ys(n + k.misalign, to_elem<T>(nan)), dxs(n + k.misalign, to_elem<T>(nan));
  std::vector<A> mean(stats, nan), rstd(stats, nan), dw(C, nan), db(C, nan);
  std::vector<A> workspace(pln::cuda::workspace_elements(g), nan);
  pln::cuda::forward<T>(g, xs.data() + k.misalign, ws.data(), bs.data(), ys.data() + k.misalign, mean.data(),
                        rstd.data(), eps, k.centering, nullptr);
  EXPECT_STREQ(pln::cuda::synchronize(nullptr), "");
  pln::cuda::backward<T>(g, dys.data() + k.misalign, xs.data() + k.misalign, mean.data(), rstd.data(), ws.data(),
                         k.centering, dxs.data() + k.misalign, k.params ? dw.data() : nullptr,
                         k.params ? db.data() : nullptr, k.params ? workspace.data() : nullptr, nullptr);
  EXPECT_STREQ(pln::cuda::synchronize(nullptr), "");

  Outcome out;
  std::vector<double> y(n);
  out.dx.resize(n);
  for (int64_t i = 0; i < n; ++i) y[i] = from_elem(ys[i + k.misalign]), out.dx[i] = from_elem(dxs[i + k.misalign]);
  out.dw.assign(dw.begin(), dw.end());
  out.db.assign(db.begin(), db.end());
  out.cuda = {relative_error(y, ref.y),   relative_error(mean, ref.mean), relative_error(rstd, ref.rstd),
              relative_error(out.dx, ref.dx), relative_error(out.dw, ref.dw), relative_error(out.db, ref.db)};

  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    std::vector<T> cy(n), cdx(n), cmean(stats), crstd(stats);
    std::vector<double> cdw(C), cdb(C);
    const T* cx = xs.data() + k.misalign;
    pln::cpu::forward<T>(g, cx, ws.data(), bs.data(), cy.data(), cmean.data(), crstd.data(), eps, k.centering);
    pln::cpu::backward<T>(g, dys.data() + k.misalign, cx, cmean.data(), crstd.data(), ws.data(), k.centering,
                          cdx.data(), cdw.data(), cdb.data());
    out.cpu = {relative_error(cy, ref.y),   relative_error(cmean, ref.mean), relative_error(crstd, ref.rstd),
               relative_error(cdx, ref.dx), relative_error(cdw, ref.dw),     relative_error(cdb, ref.db)};
  }
  return out;
}

// The largest error each dtype may show (relative to the largest reference value).
template <typename T>
double tolerance() {
  if constexpr (std::is_same_v<T, pln::cuda::half_t>) return 4e-3;
  if constexpr (std::is_same_v<T, pln::cuda::bfloat16_t>) return 3e-2;
  if constexpr (std::is_same_v<T, float>) return 2e-5;
  return 1e-12;
}

template <typename T>
void expect_parity(const Case& k, double tol = tolerance<T>()) {
  SCOPED_TRACE(std::string(type_name<T>()) + " " + k.name());
  const Outcome r = run_case<T>(k);
  EXPECT_LE(r.cuda.y, tol);
  EXPECT_LE(r.cuda.mean, tol);
  EXPECT_LE(r.cuda.rstd, tol);
  EXPECT_LE(r.cuda.dx, 2 * tol);
  // dweight/dbias are sums over every group: float accumulation of many rows
  // (16-bit types too) rounds more than one group's values.
  const double sum_tol = sizeof(typename pln::cuda::Acc<T>::type) == 8 ? 1e-12 : 1e-4;
  EXPECT_LE(r.cuda.dw, std::max(tol, sum_tol));
  EXPECT_LE(r.cuda.db, std::max(tol, sum_tol));
}

template <typename T>
void parity_sweep() {
  // Features-last rows: every path (vectors of 1 to 16 bytes, 1 to 32 lanes,
  // 8 and 32 values per thread, a block per group).
  for (int64_t group : {1, 2, 4, 8, 16, 32, 35, 64, 96, 128, 1024, 4096}) {
    const int64_t channels = group >= 64 ? group * 2 : 64 / group * group + (group == 35 ? 35 : 0);
    const int64_t outer = std::max<int64_t>(2, 8192 / channels);
    expect_parity<T>({{outer, channels, 1, group}});
  }
  expect_parity<T>({{37, 8 * 3, 1, 24}});  // C = g, an odd count of rows
  // NCHW: compiled group sizes, run-time ones up to 32, and larger groups.
  for (int64_t group : {1, 2, 4, 8, 16, 32, 3, 35, 64}) {
    expect_parity<T>({{3, group * (group > 16 ? 2 : 4), 37, group}});
  }
  // PLS, in each path.
  expect_parity<T>({{64, 64, 1, 8}, false});
  expect_parity<T>({{4, 4096, 1, 4096}, false});
  expect_parity<T>({{2, 16, 25, 8}, false});
  expect_parity<T>({{2, 70, 9, 35}, false});
  // Pointers off their vectors' alignment by one element.
  expect_parity<T>({{64, 64, 1, 8}, true, 0, 1, 1});
  expect_parity<T>({{16, 256, 1, 128}, true, 0, 1, 1});
}

TEST(CudaKernelsOnCpu, ParityFloat32) { parity_sweep<float>(); }
TEST(CudaKernelsOnCpu, ParityFloat64) { parity_sweep<double>(); }
TEST(CudaKernelsOnCpu, ParityFloat16) { parity_sweep<pln::cuda::half_t>(); }
TEST(CudaKernelsOnCpu, ParityBFloat16) { parity_sweep<pln::cuda::bfloat16_t>(); }

TEST(CudaKernelsOnCpu, ManyRows) {
  expect_parity<float>({{100000, 16, 1, 8}});
  expect_parity<pln::cuda::bfloat16_t>({{100000, 16, 1, 8}});
  expect_parity<float>({{4, 16, 25600, 8}});  // 1e5 positions
}

TEST(CudaKernelsOnCpu, EmptyInputs) {
  // No rows: nothing to normalise, and dweight/dbias are zeros (not left unwritten).
  for (const Geometry g : {Geometry{0, 16, 1, 8}, Geometry{0, 16, 9, 4}, Geometry{3, 16, 0, 8}}) {
    SCOPED_TRACE(testing::Message() << "[" << g.outer << ", " << g.channels << ", " << g.inner << "]");
    const Outcome r = run_case<float>({g});
    for (size_t c = 0; c < r.dw.size(); ++c) {
      EXPECT_EQ(r.dw[c], 0.0);
      EXPECT_EQ(r.db[c], 0.0);
    }
  }
}

// A common offset far above the spread: the shift-and-recentre scheme keeps
// the error where it is at offset 0, as the CPU kernels do.
template <typename T>
void offsets(double floor) {
  const Case shapes[] = {
      {{512, 64, 1, 8}},     // rows, 4 values per thread
      {{64, 192, 1, 96}},    // rows, up to 32 values per thread
      {{8, 8192, 1, 4096}},  // a block per group
      {{4, 64, 64, 8}},      // NCHW, compiled group size
      {{4, 70, 16, 35}},     // NCHW, larger groups
  };
  for (Case k : shapes) {
    for (double offset : {0.0, 1.0, 1e2, 1e3, 1e4}) {
      k.offset = offset;
      k.scale = 0.1;
      SCOPED_TRACE(std::string(type_name<T>()) + " " + k.name());
      const Outcome r = run_case<T>(k);
      std::printf("%-8s %-40s y %.2e (cpu %.2e)  dx %.2e (cpu %.2e)  dw %.2e (cpu %.2e)\n", type_name<T>(),
                  k.name().c_str(), r.cuda.y, r.cpu.y, r.cuda.dx, r.cpu.dx, r.cuda.dw, r.cpu.dw);
      // Within a small multiple of the CPU kernels' error, and of the error at offset 0.
      EXPECT_LE(r.cuda.y, std::max(4 * r.cpu.y, floor));
      EXPECT_LE(r.cuda.dx, std::max(4 * r.cpu.dx, floor));
      EXPECT_LE(r.cuda.dw, std::max(4 * r.cpu.dw, floor));
      EXPECT_LE(r.cuda.db, std::max(4 * r.cpu.db, floor));
    }
  }
}

TEST(CudaKernelsOnCpu, CommonOffsetsFloat32) { offsets<float>(4e-6); }
TEST(CudaKernelsOnCpu, CommonOffsetsFloat64) { offsets<double>(1e-14); }

// dweight and dbias are summed in a fixed order: two runs give the same bits.
// (On the CPU no run can race; scripts/device-check runs the GPU's twin.)
TEST(CudaKernelsOnCpu, DeterministicParameterGradients) {
  for (const Geometry g : {Geometry{4096, 64, 1, 8}, Geometry{8, 8192, 1, 4096}, Geometry{8, 32, 256, 8}}) {
    const Outcome first = run_case<float>({g}), second = run_case<float>({g});
    EXPECT_EQ(0, std::memcmp(first.dw.data(), second.dw.data(), first.dw.size() * sizeof(double)));
    EXPECT_EQ(0, std::memcmp(first.db.data(), second.db.data(), first.db.size() * sizeof(double)));
    EXPECT_EQ(0, std::memcmp(first.dx.data(), second.dx.data(), first.dx.size() * sizeof(double)));
  }
}

// Without dweight and dbias the backward writes dx alone, the same dx.
TEST(CudaKernelsOnCpu, BackwardWithoutParameterGradients) {
  for (const Geometry g : {Geometry{256, 64, 1, 8}, Geometry{4, 8192, 1, 4096}, Geometry{4, 32, 40, 8},
                           Geometry{2, 128, 9, 64}}) {
    Case without{g};
    without.params = false;
    const Outcome full = run_case<float>({g}), dx_only = run_case<float>(without);
    EXPECT_EQ(0, std::memcmp(full.dx.data(), dx_only.dx.data(), full.dx.size() * sizeof(double)));
  }
}

// ------------------------------------------------------------ gated norm ---

struct GatedCase {
  int64_t rows, channels, group;
  bool centering, before, sigmoid;
  std::string name() const {
    char text[160];
    std::snprintf(text, sizeof text, "[%lld, %lld] g=%lld %s gate %s, %s", static_cast<long long>(rows),
                  static_cast<long long>(channels), static_cast<long long>(group), centering ? "PLN" : "PLS",
                  before ? "before" : "after", sigmoid ? "sigmoid" : "silu");
    return text;
  }
};

// max |got - want| / max |want| over double vectors; infinity for a NaN in got.
double gated_error(const std::vector<double>& got, const std::vector<double>& want) {
  std::vector<Real> w(want.begin(), want.end());
  return relative_error(got, w);
}

// The CUDA gated kernels on T against the CPU's float64 kernels on the same
// (rounded) inputs; dweight/dbias checked against their sums too.
template <typename T>
void expect_gated_parity(const GatedCase& k, double tol = tolerance<T>()) {
  SCOPED_TRACE(std::string(type_name<T>()) + " " + k.name());
  using A = typename pln::cuda::Acc<T>::type;
  const int64_t n = k.rows * k.channels, C = k.channels, stats = k.rows * (C / k.group);
  const pln::cuda::gated::Shape shape{k.rows, C, k.group, 1e-5, k.centering, k.before, k.sigmoid};
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  std::vector<T> xs(n), zs(n), dys(n), ws(C), bs(C);
  std::vector<double> x(n), z(n), dy(n), w(C), b(C);
  const auto draw = [&](std::vector<T>& elems, std::vector<double>& values, double mean, double spread) {
    for (size_t i = 0; i < elems.size(); ++i) {
      elems[i] = to_elem<T>(mean + spread * normal(rng));
      values[i] = from_elem(elems[i]);
    }
  };
  draw(xs, x, 0.5, 1), draw(zs, z, 0, 2), draw(dys, dy, 0, 1), draw(ws, w, 1, 0.5), draw(bs, b, 0, 0.5);

  std::vector<double> ry(n), rmean(stats), rrstd(stats), rdx(n), rdz(n), rdw(C), rdb(C);
  pln::cpu::gated::forward<double>(shape, x.data(), z.data(), w.data(), b.data(), ry.data(), rmean.data(),
                                   rrstd.data());
  pln::cpu::gated::backward<double>(shape, dy.data(), x.data(), z.data(), w.data(), b.data(), rmean.data(),
                                    rrstd.data(), rdx.data(), rdz.data(), rdw.data(), rdb.data());

  const A nan = std::numeric_limits<A>::quiet_NaN();
  std::vector<T> ys(n, to_elem<T>(nan)), means(stats, to_elem<T>(nan)), rstds(stats, to_elem<T>(nan));
  std::vector<T> dxs(n, to_elem<T>(nan)), dzs(n, to_elem<T>(nan));
  std::vector<A> dw(C, nan), db(C, nan), workspace(pln::cuda::gated::workspace_elements(shape), nan);
  pln::cuda::gated::forward<T>(shape, xs.data(), zs.data(), ws.data(), bs.data(), ys.data(), means.data(),
                               rstds.data(), nullptr);
  EXPECT_STREQ(pln::cuda::synchronize(nullptr), "");
  pln::cuda::gated::backward<T>(shape, dys.data(), xs.data(), zs.data(), ws.data(), bs.data(), dxs.data(),
                                dzs.data(), dw.data(), db.data(), workspace.data(), nullptr);
  EXPECT_STREQ(pln::cuda::synchronize(nullptr), "");

  const auto values = [](const auto& elems) {
    std::vector<double> out(elems.size());
    for (size_t i = 0; i < elems.size(); ++i) out[i] = from_elem(elems[i]);
    return out;
  };
  EXPECT_LE(gated_error(values(ys), ry), tol);
  EXPECT_LE(gated_error(values(means), rmean), tol);
  EXPECT_LE(gated_error(values(rstds), rrstd), tol);
  EXPECT_LE(gated_error(values(dxs), rdx), 2 * tol);
  EXPECT_LE(gated_error(values(dzs), rdz), 2 * tol);
  const double sum_tol = sizeof(A) == 8 ? 1e-12 : 1e-4;
  EXPECT_LE(gated_error(std::vector<double>(dw.begin(), dw.end()), rdw), std::max(tol, sum_tol));
  EXPECT_LE(gated_error(std::vector<double>(db.begin(), db.end()), rdb), std::max(tol, sum_tol));
}

template <typename T>
void gated_sweep() {
  // Groups of one warp's stride and of several (Mamba-2's 640 and the
  // head-sized 128), a group that is not a multiple of 32, groups of one; an
  // odd count of rows, and more rows than the dweight/dbias parts.
  const GatedCase shapes[] = {{3, 64, 16, true, true, false},     {5, 1280, 640, false, true, false},
                              {4, 256, 128, false, false, false}, {7, 300, 100, true, false, true},
                              {2, 8, 1, false, true, true},       {1100, 64, 32, false, true, false}};
  for (GatedCase k : shapes) {
    expect_gated_parity<T>(k);
    k.centering = !k.centering, k.before = !k.before, k.sigmoid = !k.sigmoid;
    expect_gated_parity<T>(k);
  }
}

TEST(CudaGatedOnCpu, ParityFloat32) { gated_sweep<float>(); }
TEST(CudaGatedOnCpu, ParityFloat64) { gated_sweep<double>(); }
TEST(CudaGatedOnCpu, ParityFloat16) { gated_sweep<pln::cuda::half_t>(); }
TEST(CudaGatedOnCpu, ParityBFloat16) { gated_sweep<pln::cuda::bfloat16_t>(); }

// No rows: nothing written but dweight/dbias, which are zeros.
TEST(CudaGatedOnCpu, EmptyInputGivesZeroParameterGradients) {
  const pln::cuda::gated::Shape shape{0, 64, 16, 1e-5, false, true, false};
  std::vector<float> dw(64, 1.f), db(64, 1.f), workspace(pln::cuda::gated::workspace_elements(shape));
  pln::cuda::gated::backward<float>(shape, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, dw.data(),
                                    db.data(), workspace.data(), nullptr);
  EXPECT_STREQ(pln::cuda::synchronize(nullptr), "");
  EXPECT_EQ(std::count(dw.begin(), dw.end(), 0.f), 64);
  EXPECT_EQ(std::count(db.begin(), db.end(), 0.f), 64);
}

// The backward queues two kernels, the second (param_finish) summing what the
// first writes: on the null stream, which every test here uses, they must run
// in order (HIP-CPU alone runs them concurrently; src/cuda/runtime.h).
TEST(CudaRuntimeOnCpu, NullStreamRunsKernelsInOrder) {
  EXPECT_EQ(pln::cuda::testing::null_stream_order_violations(200), 0);
}

}  // namespace
