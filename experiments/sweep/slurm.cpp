#include "sweep/slurm.h"

#include "sweep/launchers.h"

#include "system/atomic_file.h"
#include "records/file_lock.h"
#include "system/process.h"

#include <fmt/format.h>

#include <regex>
#include <stdexcept>

namespace pln::exp {

namespace {

bool valid_time(const std::string& t) {
  if (t == "UNLIMITED" || t == "INFINITE") return true;
  static const std::regex forms(R"(^(\d+)$|^(\d+):([0-5]?\d)$|^(\d+):([0-5]?\d):([0-5]?\d)$|)"
                                R"(^(\d+)-(\d+)$|^(\d+)-(\d+):([0-5]?\d)$|^(\d+)-(\d+):([0-5]?\d):([0-5]?\d)$)");
  std::smatch m;
  if (!std::regex_match(t, m, forms)) return false;
  // Hours within a day when days are given; a time of zero is no time at all.
  if (m[8].matched && std::stoi(m[8]) > 23) return false;
  if (m[10].matched && std::stoi(m[10]) > 23) return false;
  if (m[13].matched && std::stoi(m[13]) > 23) return false;
  return t.find_first_not_of("0:-") != std::string::npos;
}

}  // namespace

void validate(const SlurmOptions& o) {
  if (!o.time.empty() && !valid_time(o.time)) {
    throw std::invalid_argument(fmt::format(
        "--time '{}' is not a time sbatch takes: minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S (hours < 24 with days, "
        "not zero), or UNLIMITED", o.time));
  }
  static const std::regex mem(R"(^[1-9]\d*[KMGT]?$)");
  if (!o.mem.empty() && !std::regex_match(o.mem, mem)) {
    throw std::invalid_argument(fmt::format("--mem '{}' is not a memory size sbatch takes: a positive number of "
                                            "megabytes, or with a K, M, G or T suffix (e.g. 4G)", o.mem));
  }
  if (o.throttle < 0) throw std::invalid_argument(fmt::format("--throttle must be >= 0, got {}", o.throttle));
  if (o.gpus_per_cell < 0) throw std::invalid_argument(fmt::format("--gpus-per-cell must be >= 0, got {}", o.gpus_per_cell));
  static const std::regex name(R"(^[A-Za-z0-9_.,+-]+$)");
  if (!o.partition.empty() && !std::regex_match(o.partition, name)) {
    throw std::invalid_argument(fmt::format("--partition '{}' is not a partition name (letters, digits, _ . , + -)", o.partition));
  }
  if (!o.account.empty() && !std::regex_match(o.account, name)) {
    throw std::invalid_argument(fmt::format("--account '{}' is not an account name (letters, digits, _ . , + -)", o.account));
  }
  for (const auto& line : o.extra) {
    if (line.rfind("--", 0) != 0 || line.find('\n') != std::string::npos) {
      throw std::invalid_argument(fmt::format("--sbatch '{}' must be one sbatch option starting with --, as "
                                              "written after #SBATCH (e.g. --qos=long)", line));
    }
  }
}

std::filesystem::path write_slurm_array(const SlurmArray& a, const SlurmOptions& o) {
  validate(o);
  std::string commands, cells;
  for (size_t i = 0; i < a.commands.size(); ++i) {
    commands += a.commands[i] + "\n";
    cells += a.cell_dirs[i] + "\n";
  }
  const auto commands_path = a.out / "commands.txt", cells_path = a.out / "cells.txt";
  write_file_atomic(commands_path, commands);
  write_file_atomic(cells_path, cells);
  std::string sbatch = fmt::format("#SBATCH --job-name={}\n#SBATCH --array=1-{}{}\n#SBATCH --cpus-per-task={}\n",
                                   a.name, std::max<size_t>(a.commands.size(), 1),
                                   o.throttle > 0 ? fmt::format("%{}", o.throttle) : "", a.cpus_per_task);
  if (!o.partition.empty()) sbatch += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.account.empty()) sbatch += "#SBATCH --account=" + o.account + "\n";
  if (!o.time.empty()) sbatch += "#SBATCH --time=" + o.time + "\n";
  if (!o.mem.empty()) sbatch += "#SBATCH --mem=" + o.mem + "\n";
  if (o.gpus_per_cell > 0) sbatch += fmt::format("#SBATCH --gres=gpu:{}\n", o.gpus_per_cell);
  for (const auto& line : o.extra) sbatch += "#SBATCH " + line + "\n";
  const auto script_path = a.out / "grid.slurm";
  const std::string script = fmt::format(
      "#!/bin/bash\n"
      "# {} pending cell(s). Submit with `sbatch {}`; afterwards rerun\n"
      "# `{}` to collect records.csv.\n"
      "{}"
      "#SBATCH --requeue\n"
      "#SBATCH --output={}/slurm-%A_%a.log\n"
      "set -euo pipefail\n"
      "cell=\"$(sed -n \"${{SLURM_ARRAY_TASK_ID}}p\" {})\"\n"
      "mkdir -p \"$cell\"\n"
      "# The cell's own log, beside its records (appended: a requeued task adds to it).\n"
      "status=0\n"
      "eval \"$(sed -n \"${{SLURM_ARRAY_TASK_ID}}p\" {})\" >> \"$cell/run.log\" 2>&1 || status=$?\n"
      "# {}: the cell is running in another process (a local grid, a second array), which finishes it.\n"
      "if [ \"$status\" -eq {} ]; then status=0; fi\n"
      "exit \"$status\"\n",
      a.commands.size(), script_path.string(), a.collect_hint, sbatch, a.out.string(),
      shell_command({cells_path.string()}), shell_command({commands_path.string()}), kExitRunClaimed,
      kExitRunClaimed);
  write_file_atomic(script_path, script);
  return script_path;
}

void launch_slurm(const Sweep& sweep, const SlurmOptions& options) {
  const auto& out = sweep.out;
  const auto& name = sweep.experiment->name;
  SlurmArray array{fmt::format("pln-{}-{}", name, sweep.grid), out, {}, {}, sweep.threads,
                   fmt::format("pln grid {} --preset {} --out {}", name, sweep.grid, out.string())};
  for (const auto* cell : sweep.pending) {
    array.cell_dirs.push_back((out / cell->id).string());
    array.commands.push_back(shell_command(sweep.command(*cell)));
  }
  SlurmOptions slurm = options;
  if (sweep.on_cuda && slurm.gpus_per_cell == 0) slurm.gpus_per_cell = 1;  // a CUDA cell needs its GPU
  const auto script = write_slurm_array(array, slurm);
  fmt::print("wrote {} and {} ({} pending cells)\n", script.string(), (out / "commands.txt").string(),
             sweep.pending.size());
}

}  // namespace pln::exp
