#pragma once
// Helpers shared by the experiment tests.

#include <records/csv.h>
#include <run/run.h>
#include <spec/experiment.h>
#include <sweep/cells.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

/// The checkout the tests were configured from (tests/CMakeLists.txt writes it).
extern const char* const pln_test_source_dir;

namespace pln::test {

/// The message of the exception `fn` throws, or "(no error)".
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

/// An empty directory of its own under the system's temporary directory.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("pln-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// A file's whole content ("" when unreadable).
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The fourier smoke grid (4 cells of a few hundred steps), run once per test
/// process for the tests that read a finished grid (records, grid state,
/// Slurm): what `pln grid fourier --preset smoke` leaves.
inline const std::filesystem::path& smoke_grid() {
  static const std::filesystem::path dir = [] {
    const auto d = fresh_dir("results-grid");
    const auto& e = exp::find_experiment("fourier");
    const auto& spec = exp::find_grid(e, "smoke");
    const auto cells = exp::expand_grid(spec);
    for (const auto& cell : cells) {
      exp::RunRequest request;
      request.preset = spec.preset;
      request.sets = cell.sets;
      request.out = d / cell.id;
      request.threads = 1;
      exp::run_experiment(e, request);
    }
    std::ofstream(d / "grid.json") << exp::grid_manifest(e, "smoke").dump(2);
    std::ofstream(d / "records.csv") << exp::to_csv(exp::collect_records(spec, cells, d));
    return d;
  }();
  return dir;
}

}  // namespace pln::test
