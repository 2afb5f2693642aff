#include "sweep/launchers.h"

#include "system/process.h"

#include <fmt/format.h>

namespace pln::exp {

void launch_commands(const Sweep& sweep) {
  for (const auto* cell : sweep.pending) fmt::print("{}\n", shell_command(sweep.command(*cell)));
}

}  // namespace pln::exp
