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
#include "system/printable.h"

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

#include <stdlib.h>

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

// The file pln writes into .replaced before it moves a finished run there,
// listing what it moves: each regular file with its size, each folder. A
// .replaced folder without it (one copied or planted) is not pln's, and is
// neither taken for a finished run nor deleted. A marker can be planted too,
// so it is trusted only as far as harm cannot follow: finish() deletes
// inside .replaced exactly the listed files that still have their listed
// size (and then the listed folders left empty), and nothing else; and no
// file of the run directory itself is ever deleted on its word.
constexpr const char* kSetAsideMarker = ".pln-set-aside";
// Where a fresh start moves what a stopped replacement left in the directory
// (pln cannot tell those files from a user's): moved aside, never deleted.
constexpr const char* kUnfinishedPrefix = ".pln-unfinished.";

bool set_aside_by_pln(const fs::path& aside) {
  std::error_code error;
  return fs::symlink_status(aside, error).type() == fs::file_type::directory &&
         fs::symlink_status(aside / kSetAsideMarker, error).type() == fs::file_type::regular;
}

// Files a run's directory holds that are not the finished run's it
// replaces: the claim and the log its launcher opened (this run's), the
// folders pln sets things aside in, and a file under the marker's name
// (moved, it would replace the marker).
bool belongs_to_this_run(const fs::path& name) {
  return name == claim_file("").filename() || name == "run.log" || name == ".replaced" ||
         name == kSetAsideMarker || name.string().rfind(kUnfinishedPrefix, 0) == 0;
}

// What moving `out`'s entries (all but this run's own) into .replaced puts
// there, as the marker lists it: {"files": {"PATH": size}, "folders": [PATH]},
// paths relative to .replaced. Links and other special files are not listed:
// moved, they are never deleted.
Config set_aside_listing(const fs::path& out) {
  Config files = Config::object(), folders = Config::array();
  const auto note = [&](const fs::path& path, const fs::path& relative) {
    std::error_code error;
    const auto type = fs::symlink_status(path, error).type();
    if (type == fs::file_type::regular) files[relative.string()] = fs::file_size(path, error);
    else if (type == fs::file_type::directory) folders.push_back(relative.string());
  };
  for (const auto& entry : fs::directory_iterator(out)) {
    if (belongs_to_this_run(entry.path().filename())) continue;
    note(entry.path(), entry.path().filename());
    if (entry.symlink_status().type() != fs::file_type::directory) continue;
    for (const auto& inner : fs::recursive_directory_iterator(entry.path())) {  // links are not followed
      note(inner.path(), entry.path().filename() / fs::relative(inner.path(), entry.path()));
    }
  }
  return Config{{"set_aside_from", out.string()}, {"files", files}, {"folders", folders}};
}

// Deletes from `aside` what its marker lists, as it lists it (see
// kSetAsideMarker), then the marker and the folder if nothing else is left.
// Returns the names of what is left.
std::vector<std::string> remove_set_aside(const fs::path& aside) {
  std::error_code error;
  try {
    const Config listing = read_json_file(aside / kSetAsideMarker);
    const std::string source = (aside / kSetAsideMarker).string();
    if (listing.contains("files") && listing.at("files").is_object()) {
      for (const auto& item : listing.at("files").items()) {
        const auto path = path_inside(aside, item.key(), source);
        if (path.filename() == kSetAsideMarker || !item.value().is_number_unsigned()) continue;
        if (fs::symlink_status(path, error).type() == fs::file_type::regular &&
            fs::file_size(path, error) == item.value().get<uint64_t>()) {
          fs::remove(path, error);
        }
      }
    }
    if (listing.contains("folders") && listing.at("folders").is_array()) {
      std::vector<fs::path> folders;
      for (const auto& item : listing.at("folders")) {
        if (item.is_string()) folders.push_back(path_inside(aside, item.get<std::string>(), source));
      }
      // The deepest first; fs::remove leaves a folder that is not empty.
      std::sort(folders.begin(), folders.end(), [](const fs::path& a, const fs::path& b) {
        return std::distance(a.begin(), a.end()) > std::distance(b.begin(), b.end());
      });
      for (const auto& folder : folders) {
        if (fs::symlink_status(folder, error).type() == fs::file_type::directory) fs::remove(folder, error);
      }
    }
    fs::remove(aside / kSetAsideMarker, error);
  } catch (const std::exception&) {
    // A marker pln cannot read lists nothing: everything stays.
  }
  fs::remove(aside, error);  // only when empty
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(aside, error)) left.push_back(printable(entry.path().filename().string()));
  std::sort(left.begin(), left.end());
  return left;
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
  if (const auto left = remove_set_aside(set_aside); !left.empty()) {
    fmt::print("{}: left {} (pln deletes only the files it set aside there, as it listed them): {}\n",
               set_aside.string(), left.size() == 1 ? "one entry" : fmt::format("{} entries", left.size()),
               fmt::join(left, ", "));
  }
  set_aside.clear();
}

namespace {

// Moves what a stopped replacement left in `out` (its finished predecessor
// waits in .replaced) into a folder of its own beside, so that none of it
// stays among a fresh start's files. Moved, not deleted: pln cannot tell
// those files from ones a user put there.
void move_unfinished_aside(const fs::path& out) {
  std::vector<fs::path> entries;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (!belongs_to_this_run(entry.path().filename())) entries.push_back(entry.path());
  }
  if (entries.empty()) return;
  std::string folder = (out / (std::string(kUnfinishedPrefix) + "XXXXXX")).string();
  if (!::mkdtemp(folder.data())) throw std::runtime_error("cannot create a folder in " + out.string());
  for (const auto& entry : entries) fs::rename(entry, fs::path(folder) / entry.filename());
  fmt::print("{}: what the stopped replacement there left ({} entries) is moved to {}; delete it when it is not "
             "needed\n", out.string(), entries.size(), folder);
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
    if (!resume) move_unfinished_aside(out);
    return dir;
  }
  // The finished run waits aside, whole, until the new one is: a run that
  // fails or is stopped leaves it there, and the directory does not look
  // finished while the new run writes into it.
  std::error_code error;
  if (fs::symlink_status(aside, error).type() != fs::file_type::not_found) {
    const auto left = aside_is_ours ? remove_set_aside(aside) : std::vector<std::string>{"(no " + std::string(kSetAsideMarker) + ")"};
    if (!left.empty()) {
      throw std::invalid_argument(fmt::format(
          "{} holds what pln did not set aside there ({}); it is left as it is: move it away to replace the "
          "finished run in {}", aside.string(), fmt::join(left, ", "), out.string()));
    }
  }
  fs::create_directory(aside);
  // The listing first: a run killed while moving leaves a .replaced that is
  // still pln's, and lists what it moved.
  write_file_atomic(aside / kSetAsideMarker, set_aside_listing(out).dump(2) + "\n");
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
