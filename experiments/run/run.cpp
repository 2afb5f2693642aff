#include "run/run.h"

#include "system/atomic_file.h"
#include "records/file_lock.h"
#include "records/json.h"
#include "records/run_state.h"
#include "system/blas_core.h"
#include "run/device.h"
#include "system/provenance.h"
#include "system/start_up.h"
#include "system/threads_and_memory.h"

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
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (requested < 0 || requested > kMaxThreadsPerCpu * cpus) {
    throw std::invalid_argument(fmt::format("--threads must be in 0..{} ({} per CPU; 0: one per CPU), got {}",
                                            kMaxThreadsPerCpu * cpus, kMaxThreadsPerCpu, requested));
  }
  return requested > 0 ? requested : cpus;
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

namespace {

namespace fs = std::filesystem;

// The file pln writes into .replaced before it moves a finished run there:
// a .replaced folder without it (one copied or planted) is not pln's, and is
// neither taken for a finished run nor deleted.
constexpr const char* kSetAsideMarker = ".pln-set-aside";

bool set_aside_by_pln(const fs::path& aside) {
  std::error_code error;
  return fs::symlink_status(aside, error).type() == fs::file_type::directory &&
         fs::symlink_status(aside / kSetAsideMarker, error).type() == fs::file_type::regular;
}

// Files a run's directory holds that belong to the run now starting, not to
// the finished one it replaces: the claim, and the log its launcher opened.
bool belongs_to_this_run(const fs::path& name) {
  return name == claim_file("").filename() || name == "run.log" || name == ".replaced";
}

// What differs between the finished run's record and this run's
// configuration, for the message; empty when it is the same run.
std::vector<std::string> how_it_differs(const Config& record, const std::string& experiment, const Config& config) {
  if (!record.is_object() || !record.contains("experiment") || !record.contains("config")) {
    return {"its config.json is not a pln run record"};
  }
  if (record.at("experiment") != experiment) {
    return {fmt::format("a {} run, not {}", value_text(record.at("experiment")), experiment)};
  }
  // The device is where a run ran, not what it computed (grids treat it so too).
  Config ran = record.at("config"), now = non_finite_as_text(config);
  if (ran.is_object()) ran.erase("device");
  now.erase("device");
  if (!ran.is_object()) return {"its config.json holds no configuration"};
  std::vector<std::string> differences;
  for (const auto& item : now.items()) {
    if (!ran.contains(item.key())) differences.push_back(item.key() + " (absent there)");
    else if (ran.at(item.key()) != item.value()) {
      differences.push_back(fmt::format("{}={} there", item.key(), value_text(ran.at(item.key()))));
    }
  }
  for (const auto& item : ran.items()) {
    if (!now.contains(item.key())) differences.push_back(item.key() + " (absent here)");
  }
  return differences;
}

}  // namespace

void RunDirectory::finish() {
  if (set_aside.empty()) return;
  std::error_code ignored;
  fs::remove_all(set_aside, ignored);
  set_aside.clear();
}

namespace {

// Removes what a stopped replacement left in `out` (its finished
// predecessor waits in .replaced, with whatever else the directory held), so
// that none of it stays beside a fresh start's files.
void clear_unfinished(const fs::path& out) {
  for (const auto& entry : fs::directory_iterator(out)) {
    if (!belongs_to_this_run(entry.path().filename())) fs::remove_all(entry.path());
  }
}

}  // namespace

RunDirectory take_run_directory(const fs::path& out, const std::string& experiment, const Config& config,
                                bool resume, bool force) {
  refuse_control_characters(out, "--out");
  fs::create_directories(out);
  // One process per run directory: a second grid or a requeued task on the
  // same cell leaves it to the first.
  RunDirectory dir{claim_run(out), std::nullopt, {}};
  // A run killed while writing a record leaves its temporary file behind.
  remove_stale_temporaries(out);
  const fs::path aside = out / ".replaced";
  const bool aside_is_ours = set_aside_by_pln(aside);
  // The finished run here: in the directory, or set aside by a replacement
  // that was stopped before it finished.
  const fs::path finished = fs::exists(out / "summary.json")                      ? out
                            : aside_is_ours && fs::exists(aside / "summary.json") ? aside
                                                                                  : fs::path();
  if (finished.empty()) return dir;
  std::vector<std::string> differences;
  try {
    differences = how_it_differs(read_json_file(finished / "config.json"), experiment, config);
  } catch (const std::exception& e) {
    differences = {e.what()};
  }
  if (finished == out && differences.empty() && resume) {
    dir.finished = read_json_file(out / "summary.json");
    return dir;
  }
  if (!differences.empty() && !force) {
    throw std::invalid_argument(fmt::format(
        "{} holds a finished run of another family or configuration{} ({}); it is left as it is: choose "
        "another --out, or pass --force to replace it (its files wait in {} and are deleted when this run "
        "finishes)", out.string(), finished == aside ? ", set aside by a replacement that did not finish," : "",
        fmt::join(differences, "; "), aside.string()));
  }
  dir.set_aside = aside;
  if (finished == aside) {
    // The finished run already waits aside; the stopped replacement's files
    // are resumed, or cleared for a fresh start.
    if (!resume) clear_unfinished(out);
    return dir;
  }
  // The finished run waits aside, whole, until the new one is: a run that
  // fails or is stopped leaves it there, and the directory does not look
  // finished while the new run writes into it.
  std::error_code error;
  if (fs::symlink_status(aside, error).type() != fs::file_type::not_found) {
    if (!aside_is_ours) {
      throw std::invalid_argument(fmt::format(
          "{} exists and was not written by pln (no {} in it); it is left as it is: move it away to replace the "
          "finished run in {}", aside.string(), kSetAsideMarker, out.string()));
    }
    fs::remove_all(aside);
  }
  fs::create_directory(aside);
  write_file_atomic(aside / kSetAsideMarker, fmt::format("{{\"set_aside_from\": {}}}\n", Config(out.string()).dump()));
  size_t moved = 0;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (belongs_to_this_run(entry.path().filename())) continue;
    fs::rename(entry.path(), aside / entry.path().filename());
    ++moved;
  }
  const std::string which =
      differences.empty() ? std::string("this configuration") : fmt::format("{}", fmt::join(differences, "; "));
  fmt::print("{}: the finished run there ({}) is set aside in {} ({} file(s)) and deleted when this run finishes\n",
             out.string(), which, aside.string(), moved);
  return dir;
}

Config run_experiment(const Experiment& experiment, const RunRequest& request) {
  if (request.out.empty()) throw std::invalid_argument("--out DIR is required");
  const Config config = resolve_config(experiment, request.preset, request.sets);
  const int threads = resolve_threads(request.threads);
  if (request.resume && !experiment.resumable) {
    throw std::invalid_argument(fmt::format("{} keeps no checkpoint; --resume is not available", experiment.name));
  }
  const torch::Device device = config_device(config);
  RunDirectory directory = take_run_directory(request.out, experiment.name, config, request.resume, request.force);
  if (directory.finished) {
    fmt::print("pln {}: {} holds this configuration's finished run; nothing to resume\n", experiment.name,
               request.out.string());
    Config summary = *directory.finished;
    summary.erase("experiment");
    return summary;
  }
  set_threads(threads);
  keep_freed_memory();

  const RunningMarker running(request.out);
  const Config record = write_run_config(request.out, experiment.name, request.preset, request.sets, threads, config);

  fmt::print("pln {}: preset {}, {} thread(s), out {}\n", experiment.name, request.preset, threads,
             request.out.string());
  fmt::print("  revision {}, kernels {}, {}, OpenMP wait {}, started {}\n", record["revision"].get<std::string>(),
             record["kernels"].get<std::string>(), record["blas"].get<std::string>(), openmp_wait_policy(),
             how_started());
  if (record.contains("blas_note")) fmt::print("  note: {}\n", record["blas_note"].get<std::string>());
  if (device.is_cuda()) fmt::print("  device {} ({})\n", device.str(), record["device_name"].get<std::string>());
  for (const auto& item : config.items()) {
    fmt::print("  {:<14} = {}\n", item.key(), value_text(item.value()));
  }
  std::fflush(stdout);

  Config summary = experiment.run(config, RunContext{request.out, request.resume, device});
  for (const auto& key : reported_metrics(experiment)) {
    if (!summary.contains(key)) {
      throw std::logic_error(fmt::format("{}: the run did not report metric '{}'", experiment.name, key));
    }
  }
  write_summary(request.out, experiment.name, summary);
  directory.finish();
  fmt::print("summary:");
  for (const auto& item : summary.items()) fmt::print(" {}={}", item.key(), value_text(item.value()));
  fmt::print("\nwrote {}\n", (request.out / "summary.json").string());
  return summary;
}

}  // namespace pln::exp
