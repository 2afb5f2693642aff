// GOMP_SPINCOUNT=30000 for the programs that train on more than one thread,
// unless the user chose how OpenMP's workers wait (OMP_WAIT_POLICY or
// GOMP_SPINCOUNT).
//
// LibTorch's operations run on its OpenMP pool and matrix products on
// OpenBLAS's own pthread pool. After each parallel region libgomp's workers
// spin, by default 300,000 rounds, on the cores the next product's OpenBLAS
// workers need: at two threads a PINN step ran slower than at one. A tenth
// of that keeps the spinning that convolutions' back-to-back regions gain
// from (README, `--threads`).
//
// libgomp reads the setting once, in its constructor, from the environment
// the process started with. So the program starts itself again with it, from
// its .preinit_array: that runs once the loader has mapped and relocated the
// libraries and before any of their constructors, LibTorch's included. libc
// is not initialised there (getenv sees nothing): the environment comes from
// the loader's argument and only system calls are made. Linked as an OBJECT
// library, since a static archive's member that nothing references would be
// left out.

#include <sched.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

namespace {

constexpr char kSpinCount[] = "GOMP_SPINCOUNT=30000";

bool starts_with(const char* text, const char* prefix) { return std::strncmp(text, prefix, std::strlen(prefix)) == 0; }

bool asks_for_one_thread(char** argv) {
  for (char** arg = argv; *arg != nullptr; ++arg) {
    if (std::strcmp(*arg, "--threads=1") == 0) return true;
    if (std::strcmp(*arg, "--threads") == 0 && arg[1] != nullptr && std::strcmp(arg[1], "1") == 0) return true;
  }
  return false;
}

bool one_cpu() {
  cpu_set_t cpus;
  return ::sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) <= 1;
}

void start_again_with_shorter_spinning(int, char** argv, char** env) {
  size_t count = 0;
  for (; env[count] != nullptr; ++count) {
    if (starts_with(env[count], "OMP_WAIT_POLICY=") || starts_with(env[count], "GOMP_SPINCOUNT=")) return;
  }
  if (asks_for_one_thread(argv) || one_cpu()) return;
  auto** with_setting = static_cast<char**>(__builtin_alloca((count + 2) * sizeof(char*)));
  std::memcpy(with_setting, env, count * sizeof(char*));
  with_setting[count] = const_cast<char*>(kSpinCount);
  with_setting[count + 1] = nullptr;
  ::execve("/proc/self/exe", argv, with_setting);
  // Only if that failed (no /proc): run on with libgomp's default.
}

__attribute__((section(".preinit_array"), used)) void (*const kStartAgain)(int, char**, char**) =
    &start_again_with_shorter_spinning;

}  // namespace
