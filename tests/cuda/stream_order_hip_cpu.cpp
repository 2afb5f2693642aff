// Two kernels queued on the null stream through src/cuda/runtime.h's launch(),
// the second reading what the first writes, with the host asleep between the
// two launches so that the runtime takes the first alone: the count of runs in
// which the second saw an unwritten value (test_kernels_on_cpu.cpp,
// CudaRuntimeOnCpu.NullStreamRunsKernelsInOrder).
#include "cuda/runtime.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

namespace {

__global__ void fill_slowly(double* values, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  double v = 0;
  for (int k = 0; k < 2000; ++k) v += k * 1e-3;  // long enough for the second launch to queue behind it
  if (i < n) values[i] = v;
}

__global__ void sum_all(const double* values, int n, double* total) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double s = 0;
  for (int i = 0; i < n; ++i) s += values[i];
  *total = s;
}

}  // namespace

namespace pln::cuda::testing {

int null_stream_order_violations(int runs) {
  constexpr int kValues = 4096, kThreadsPerBlock = 64;
  std::vector<double> values(kValues);
  double total = 0;
  int violations = 0;
  for (int r = 0; r < runs; ++r) {
    values.assign(kValues, std::numeric_limits<double>::quiet_NaN());
    launch(fill_slowly, dim3(kValues / kThreadsPerBlock), dim3(kThreadsPerBlock), 0, nullptr, values.data(), kValues);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    launch(sum_all, dim3(1), dim3(kThreadsPerBlock), 0, nullptr, values.data(), kValues, &total);
    if (cudaStreamSynchronize(nullptr) != cudaSuccess || std::isnan(total)) ++violations;
  }
  return violations;
}

}  // namespace pln::cuda::testing
