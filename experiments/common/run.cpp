#include "common/run.h"

#include "common/atomic_file.h"
#include "common/cell_state.h"
#include "common/device.h"
#include "common/threads.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pln/kernels.h>
#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <thread>

namespace pln::exp {

Config resolve_config(const Experiment& experiment, const std::string& preset,
                      const std::vector<std::string>& sets) {
  Config config = experiment.preset(preset);
  apply_overrides(config, sets, experiment.name);
  return config;
}

std::string source_revision() {
  static const std::string revision = [] {
    std::string text;
#ifdef PLN_SOURCE_DIR
    if (FILE* git = ::popen("git -C '" PLN_SOURCE_DIR "' describe --always --dirty 2>/dev/null", "r")) {
      char buffer[256];
      while (std::fgets(buffer, sizeof buffer, git)) text += buffer;
      if (::pclose(git) != 0) text.clear();
    }
#endif
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    return text.empty() ? std::string("unknown") : text;
  }();
  return revision;
}

int resolve_threads(int requested) {
  if (requested < 0) throw std::invalid_argument(fmt::format("--threads must be >= 0, got {}", requested));
  if (requested > 0) return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

Config non_finite_as_text(const Config& value) {
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return value;
  }
  if (!value.is_structured()) return value;
  Config copy = value;
  for (auto& item : copy.items()) item.value() = non_finite_as_text(item.value());
  return copy;
}

std::optional<double> metric_number(const Config& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

Config write_run_config(const std::filesystem::path& out, const std::string& experiment, const std::string& preset,
                        const std::vector<std::string>& sets, int threads, const Config& config) {
  Config record = {{"experiment", experiment},
                   {"preset", preset},
                   {"set", sets},
                   {"threads", threads},
                   {"revision", source_revision()},
                   {"torch", TORCH_VERSION},
                   {"kernels", pln::cpu_kernels()},
                   {"blas", blas_description()}};
  if (config.contains("device")) record.update(device_record(config_device(config)));
  record["config"] = config;
  write_file_atomic(out / "config.json", non_finite_as_text(record).dump(2) + "\n");
  return record;
}

Config write_summary(const std::filesystem::path& out, const std::string& experiment, const Config& summary) {
  Config document = {{"experiment", experiment}};
  for (const auto& item : summary.items()) document[item.key()] = non_finite_as_text(item.value());
  write_file_atomic(out / "summary.json", document.dump(2) + "\n");
  return document;
}

Config run_experiment(const Experiment& experiment, const RunRequest& request) {
  if (request.out.empty()) throw std::invalid_argument("--out DIR is required");
  const Config config = resolve_config(experiment, request.preset, request.sets);
  const int threads = resolve_threads(request.threads);
  if (request.resume && !experiment.resumable) {
    throw std::invalid_argument(fmt::format("{} keeps no checkpoint; --resume is not available", experiment.name));
  }
  const torch::Device device = config_device(config);
  set_threads(threads);
  keep_freed_memory();

  std::filesystem::create_directories(request.out);
  // A rerun into a finished directory must not look finished while it runs.
  std::filesystem::remove(request.out / "summary.json");
  const RunningMarker running(request.out);
  const Config record = write_run_config(request.out, experiment.name, request.preset, request.sets, threads, config);

  fmt::print("pln {}: preset {}, {} thread(s), out {}\n", experiment.name, request.preset, threads,
             request.out.string());
  fmt::print("  revision {}, kernels {}, {}, OpenMP wait {}\n", record["revision"].get<std::string>(),
             record["kernels"].get<std::string>(), record["blas"].get<std::string>(), openmp_wait_policy());
  if (device.is_cuda()) fmt::print("  device {} ({})\n", device.str(), record["device_name"].get<std::string>());
  for (const auto& item : config.items()) {
    fmt::print("  {:<14} = {}\n", item.key(), value_text(item.value()));
  }
  std::fflush(stdout);

  Config summary = experiment.run(config, RunContext{request.out, request.resume, device});
  for (const auto& key : experiment.metrics) {
    if (!summary.contains(key)) {
      throw std::logic_error(fmt::format("{}: the run did not report metric '{}'", experiment.name, key));
    }
  }
  write_summary(request.out, experiment.name, summary);
  fmt::print("summary:");
  for (const auto& item : summary.items()) fmt::print(" {}={}", item.key(), value_text(item.value()));
  fmt::print("\nwrote {}\n", (request.out / "summary.json").string());
  return summary;
}

}  // namespace pln::exp
