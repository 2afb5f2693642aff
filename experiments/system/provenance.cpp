#include "system/provenance.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

namespace pln::exp {

// Defined in built_revision.cpp, which the build writes (cmake/SourceRevision.cmake).
extern const char* const kBuiltRevision;

std::string source_revision() { return kBuiltRevision; }

std::string machine_description() {
  std::string model = "unknown CPU";
  if (std::ifstream cpuinfo("/proc/cpuinfo"); cpuinfo) {
    for (std::string line; std::getline(cpuinfo, line);) {
      if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
        model = line.substr(line.find(':') + 2);
        break;
      }
    }
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const double gib = pages > 0 && page > 0 ? double(pages) * double(page) / double(1ull << 30) : 0.0;
  return fmt::format("{}, {} cores, {:.0f} GiB", model, std::thread::hardware_concurrency(), gib);
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

}  // namespace pln::exp
