#include "run/run.h"

#include "records/atomic_file.h"
#include "records/file_lock.h"
#include "records/json.h"
#include "records/run_state.h"
#include "run/blas_core.h"
#include "run/device.h"
#include "run/provenance.h"
#include "run/threads_and_memory.h"

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
  experiment.keys.apply(config, sets);
  experiment.keys.validate(config);  // every key, and the family's checks across keys
  return config;
}

int resolve_threads(int requested) {
  if (requested < 0) throw std::invalid_argument(fmt::format("--threads must be >= 0, got {}", requested));
  if (requested > 0) return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
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
  if (const auto verdict = blas_core_verdict(); !verdict.note.empty()) record["blas_note"] = verdict.note;
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
  std::filesystem::create_directories(request.out);
  // One process per run directory: a second grid or a requeued task on the
  // same cell leaves it to the first.
  const FileLock claim = claim_run(request.out);
  set_threads(threads);
  keep_freed_memory();

  // A rerun into a finished directory must not look finished while it runs.
  std::filesystem::remove(request.out / "summary.json");
  const RunningMarker running(request.out);
  const Config record = write_run_config(request.out, experiment.name, request.preset, request.sets, threads, config);

  fmt::print("pln {}: preset {}, {} thread(s), out {}\n", experiment.name, request.preset, threads,
             request.out.string());
  fmt::print("  revision {}, kernels {}, {}, OpenMP wait {}\n", record["revision"].get<std::string>(),
             record["kernels"].get<std::string>(), record["blas"].get<std::string>(), openmp_wait_policy());
  if (record.contains("blas_note")) fmt::print("  note: {}\n", record["blas_note"].get<std::string>());
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
