#include "system/start_up.h"

#include "system/blas_core.h"

#include <fmt/format.h>

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace pln::exp {

namespace {

// Set in the re-execution's environment: the settings it was started with.
constexpr const char* kStartedAgainVariable = "PLN_STARTED_AGAIN_WITH";
constexpr const char* kSpinCount = "30000";

bool asks_for_one_thread(char** argv) {
  for (char** arg = argv; *arg != nullptr; ++arg) {
    if (std::strcmp(*arg, "--threads=1") == 0) return true;
    if (std::strcmp(*arg, "--threads") == 0 && arg[1] != nullptr && std::strcmp(arg[1], "1") == 0) return true;
  }
  return false;
}

// What this process was started again with ("" when it started once): taken
// from the environment by start_state(), so that the programs it starts (a
// grid's workers) do not inherit the mark of a restart they did not have.
std::string& started_again_with() {
  static std::string with;
  return with;
}

bool runs_on_one_cpu() {
  cpu_set_t cpus;
  return ::sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) <= 1;
}

}  // namespace

StartState start_state(char** argv) {
  StartState state;
  if (const char* with = std::getenv(kStartedAgainVariable)) {
    state.started_again = true;
    started_again_with() = with;
    ::unsetenv(kStartedAgainVariable);
  }
  state.user_wait_policy = std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr;
  state.one_thread = asks_for_one_thread(argv);
  state.one_cpu = runs_on_one_cpu();
  if (!state.started_again) {
    for (auto& [name, value] : blas_core_environment()) state.blas.push_back({name, value});
  }
  return state;
}

std::vector<EnvSetting> start_settings(const StartState& state) {
  if (state.started_again) return {};
  std::vector<EnvSetting> settings;
  if (!state.user_wait_policy && !state.one_thread && !state.one_cpu) settings.push_back({"GOMP_SPINCOUNT", kSpinCount});
  settings.insert(settings.end(), state.blas.begin(), state.blas.end());
  return settings;
}

void start_again_with(const std::vector<EnvSetting>& settings, char** argv) {
  if (settings.empty()) return;
  std::string marker;
  for (const EnvSetting& s : settings) {
    ::setenv(s.name.c_str(), s.value.c_str(), 1);
    if (s.name.rfind("PLN_", 0) != 0) marker += (marker.empty() ? "" : " ") + s.name + "=" + s.value;
  }
  ::setenv(kStartedAgainVariable, marker.c_str(), 1);
  ::execv("/proc/self/exe", argv);
  // Only if that failed (no /proc): run on as started, and say so in how_started().
  for (const EnvSetting& s : settings) ::unsetenv(s.name.c_str());
  ::unsetenv(kStartedAgainVariable);
}

std::string how_started() {
  const std::string& with = started_again_with();
  return with.empty() ? "once" : fmt::format("again with {}", with);
}

}  // namespace pln::exp
