// `pln validate`: the unit tests, every experiment's smoke grid end to end, a
// schema check of the results (and of any results folder
// named), and the figures, without training at scale. Exits non-zero naming
// what failed. --skip-smoke checks only the folders named.

#include "commands.h"

#include <spec/experiment.h>
#include <sweep/grid.h>
#include <system/printable.h>
#include <system/process.h>
#include <run/run.h>
#include <sweep/check_results.h>

#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace pln::cli {

namespace {

namespace fs = std::filesystem;

struct ValidateArgs {
  std::string out;
  std::vector<std::string> tests;
  std::vector<std::string> check;
  int jobs = 2;
  bool skip_tests = false;
  bool skip_smoke = false;
};

void validate(const ValidateArgs& args) {
  std::vector<std::string> failures;
  fs::path out = args.out;
  if (out.empty() && args.skip_tests && args.skip_smoke) {
    // Nothing is written: no directory of results.
  } else if (out.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "pln-validate-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary directory");
    out = tmpl;
  }
  if (!out.empty()) {
    fs::create_directories(out);
    fmt::print("pln validate: results in {}\n", out.string());
  }

  if (!args.skip_tests) {
    std::vector<fs::path> binaries(args.tests.begin(), args.tests.end());
    if (binaries.empty()) {
      const fs::path dir = exp::self_executable().parent_path().parent_path() / "tests";
      binaries = {dir / "pln_library_tests", dir / "pln_experiment_tests"};
    }
    for (const auto& tests : binaries) {
      const std::string name = tests.filename().string();
      if (!fs::exists(tests)) {
        failures.push_back(fmt::format("unit tests: {} not found (build the tests, or pass --tests PATH...)",
                                       tests.string()));
        continue;
      }
      fmt::print("unit tests: {} ... ", tests.string());
      std::fflush(stdout);
      const fs::path log = out / (name + ".log");
      const int code = exp::run_process({tests.string(), "--gtest_brief=1"}, log);
      fmt::print("{}\n", code == 0 ? "passed" : "FAILED");
      if (code != 0) {
        failures.push_back(fmt::format("unit tests {} failed (exit {}), see {}:\n{}", name, code, log.string(),
                                       exp::tail_of(log, 15)));
      }
    }
  }

  const std::vector<exp::Experiment> no_experiments;
  for (const auto& e : args.skip_smoke ? no_experiments : exp::experiments()) {
    fmt::print("smoke: {} ...\n", e.name);
    std::fflush(stdout);
    try {
      if (e.grids.count("smoke")) {
        exp::GridRequest request;
        request.preset = "smoke";
        request.out = out / e.name;
        request.jobs = args.jobs;
        const int failed = exp::run_grid(e, request);
        if (failed) failures.push_back(fmt::format("{}: {} smoke cell(s) failed under {}", e.name, failed, request.out.string()));
      } else {
        exp::RunRequest request;
        request.preset = "smoke";
        request.out = out / e.name;
        exp::run_experiment(e, request);
      }
    } catch (const std::exception& ex) {
      failures.push_back(fmt::format("{} smoke: {}", e.name, ex.what()));
    }
  }

  std::vector<fs::path> roots;
  if (!args.skip_smoke) roots.push_back(out);
  for (const auto& c : args.check) roots.emplace_back(c);
  if (roots.empty()) failures.push_back("nothing to check: --skip-smoke without --check DIR");
  for (const auto& root : roots) {
    std::vector<std::string> notes;
    const auto problems = exp::check_results(root, &notes);
    fmt::print("schema: {}: {}\n", root.string(), problems.empty() ? "ok" : fmt::format("{} problem(s)", problems.size()));
    for (const auto& n : notes) fmt::print("  note: {}\n", exp::printable(n, true));
    for (const auto& p : problems) failures.push_back("schema: " + p);
  }

  if (!args.skip_smoke) {
    try {
      const int drawn = plot_directory(out.string());
      fmt::print("plot: {} figure set(s) drawn\n", drawn);
    } catch (const std::exception& ex) {
      failures.push_back(std::string("plot: ") + ex.what());
    }
  }

  if (!failures.empty()) {
    std::string text = fmt::format("validate: {} failure(s):", failures.size());
    for (const auto& f : failures) text += "\n  - " + f;
    throw std::runtime_error(text);
  }
  fmt::print("validate: all checks passed\n");
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand("validate", "unit tests, every smoke preset, schema checks and figures, in minutes");
  cmd->add_option("--out", args->out, "where the smoke results go (default: a new temporary directory)");
  cmd->add_option("--tests", args->tests,
                  "the unit tests' binaries (default: ../tests/pln_library_tests and "
                  "../tests/pln_experiment_tests beside this program)");
  cmd->add_option("--check", args->check, "also schema-check the results under these directories");
  cmd->add_option("--jobs", args->jobs, "worker processes for the smoke grids")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_flag("--skip-unit-tests", args->skip_tests, "do not run the unit tests' binary");
  cmd->add_flag("--skip-smoke", args->skip_smoke,
                "do not run the smoke presets: only the schema checks of the --check directories");
  cmd->callback([args] { validate(*args); });
}

}  // namespace pln::cli
