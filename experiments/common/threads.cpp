#include "common/threads.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <malloc.h>
#include <torch/torch.h>

#include <cstdlib>

namespace pln::exp {

void set_threads(int threads) {
  torch::set_num_threads(threads);
  using SetThreads = void (*)(int);
  if (auto fn = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) fn(threads);
}

std::string blas_description() {
  using GetConfig = const char* (*)();
  if (auto fn = reinterpret_cast<GetConfig>(::dlsym(RTLD_DEFAULT, "openblas_get_config"))) return fn();
  return "not OpenBLAS";
}

std::string openmp_wait_policy() {
  if (const char* policy = std::getenv("OMP_WAIT_POLICY")) return fmt::format("OMP_WAIT_POLICY={}", policy);
  if (const char* spins = std::getenv("GOMP_SPINCOUNT")) return fmt::format("GOMP_SPINCOUNT={}", spins);
  return "default";
}

void keep_freed_memory() {
  ::mallopt(M_MMAP_THRESHOLD, 1 << 30);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace pln::exp
