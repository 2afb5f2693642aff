// The `pln` command line: one subcommand per job.

#include "commands.h"
#include "records/file_lock.h"
#include "system/printable.h"
#include "system/provenance.h"
#include "system/start_up.h"

#include <c10/util/Exception.h>
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string_view>

namespace {

// An error's message on stderr, its lines kept and each line's control
// characters escaped: messages quote records, whose text may hold terminal
// escape sequences.
void report(std::string_view message) {
  std::string text;
  for (size_t at = 0; at <= message.size();) {
    const size_t end = std::min(message.find('\n', at), message.size());
    text += (at ? "\n" : "") + pln::exp::printable(message.substr(at, end - at), true);
    at = end + 1;
  }
  fmt::print(stderr, "pln: {}\n", text);
}

}  // namespace

int main(int argc, char** argv) {
  // libgomp and OpenBLAS read their settings as they load, before this line:
  // where the process lacks one, it starts once more with all it lacks.
  pln::exp::start_again_with(pln::exp::start_settings(pln::exp::start_state(argv)), argv);
  CLI::App app{"Parallel Layer Normalization: the operator's demo and experiments"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return "pln " + pln::exp::source_revision(); },
                       "print the source revision this program was built from and exit");
  pln::cli::add_demo_command(app);
  pln::cli::add_experiment_commands(app);
  pln::cli::add_grid_command(app);
  pln::cli::add_plot_command(app);
  pln::cli::add_validate_command(app);
  pln::cli::add_pack_command(app);
  pln::cli::add_docs_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const pln::exp::RunClaimed& e) {
    std::fflush(stdout);
    report(e.what());
    return pln::exp::kExitRunClaimed;
  } catch (const c10::Error& e) {
    std::fflush(stdout);  // the error is the last line of a log holding both streams
    report(e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    report(e.what());
    return 1;
  }
  return 0;
}
