#pragma once
// A grid's pending cells as a Slurm job array: grid.slurm runs line N of
// commands.txt as array task N, with its output in the cell's own run.log, and
// is requeued by Slurm when its node fails or it is preempted (a requeued cell
// of a resumable family resumes from its last checkpoint; others start again,
// and their atomic writes leave nothing half-written).

#include <filesystem>
#include <string>
#include <vector>

namespace pln::exp {

/// What a cluster user sets on the job array; empty or 0: Slurm's default.
struct SlurmOptions {
  std::string partition;
  std::string account;
  std::string time;            ///< per cell, in a form sbatch takes: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S
  std::string mem;             ///< per cell: a number with an optional K, M, G or T
  int throttle = 0;            ///< at most this many cells at once (the array's %N)
  int gpus_per_cell = 0;
  std::vector<std::string> extra;  ///< further `#SBATCH` lines, e.g. "--qos=long"
};

/// Throws std::invalid_argument naming the option and what sbatch would take.
void validate(const SlurmOptions& options);

struct SlurmArray {
  std::string name;                          ///< job name
  std::filesystem::path out;                 ///< the grid's directory (absolute)
  std::vector<std::string> cell_dirs;        ///< one per task, absolute
  std::vector<std::string> commands;         ///< one shell command line per task
  int cpus_per_task = 1;
  std::string collect_hint;                  ///< the command that collects records.csv afterwards
};

/// Writes grid.slurm, commands.txt and cells.txt into `array.out`; returns the script's path.
std::filesystem::path write_slurm_array(const SlurmArray& array, const SlurmOptions& options);

}  // namespace pln::exp
