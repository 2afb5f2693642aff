#include "system/threads_and_memory.h"

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

void keep_freed_memory() {
  ::mallopt(M_MMAP_THRESHOLD, 1 << 30);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace pln::exp
