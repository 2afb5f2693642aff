// The sweep (experiments/sweep/): a grid's cells, the GPU slots local cells
// take, spawned processes, and Slurm arrays (options, script, CUDA cells).

#include <gtest/gtest.h>

#include "experiment_helpers.h"

#include <sweep/grid_state.h>
#include <spec/config.h>
#include <spec/experiment.h>
#include <sweep/cells.h>
#include <sweep/gpu_slots.h>
#include <sweep/grid.h>
#include <system/process.h>
#include <sweep/slurm.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace pln::exp {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::fresh_dir;
using test::slurp;
using test::smoke_grid;

// --------------------------------------------------------------------- grids

TEST(Grid, ExpandsTheProductInAStableOrder) {
  GridSpec spec{"", "smoke", Config{{"steps", 5}},
                {{"model", {{"LN", Config{{"norm", "ln"}}}, {"PLN(4)", Config{{"norm", "pln"}, {"group", 4}}}}},
                 {"seed", {{"0", Config{{"seed", 0}}}, {"1", Config{{"seed", 1}}}, {"2", Config{{"seed", 2}}}}}}};
  const auto cells = expand_grid(spec);
  ASSERT_EQ(cells.size(), 6u);
  std::set<std::string> ids;
  for (const auto& c : cells) ids.insert(c.id);
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_EQ(cells[0].id, "0_model=LN_seed=0");
  EXPECT_EQ(cells[4].id, "4_model=PLN4_seed=1");
  EXPECT_EQ(cells[4].sets, (std::vector<std::string>{"steps=5", "norm=pln", "group=4", "seed=1"}));
  EXPECT_EQ(cells[4].labels.at("model"), "PLN(4)");
  EXPECT_EQ(expand_grid(spec)[5].id, cells[5].id);
}

// -------------------------------------------------------------- GPU slots

TEST(Device, GridCellsGoToTheLeastBusyVisibleGpu) {
  GpuSlots gpus(3, "4,6,7");
  EXPECT_EQ(gpus.count(), 3u);
  EXPECT_EQ(gpus.take(), 0);
  EXPECT_EQ(gpus.take(), 1);
  EXPECT_EQ(gpus.take(), 2);
  EXPECT_EQ(gpus.take(), 0);  // a second cell on each, the first again on a tie
  gpus.give_back(1);
  EXPECT_EQ(gpus.take(), 1);  // the one freed
  using Env = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(gpus.environment(2), (Env{{"CUDA_VISIBLE_DEVICES", "7"}}));
  EXPECT_EQ(gpus.environment(-1), Env{});
  EXPECT_EQ(GpuSlots(2, nullptr).environment(1), (Env{{"CUDA_VISIBLE_DEVICES", "1"}}));
  GpuSlots none(0, nullptr);
  EXPECT_EQ(none.take(), -1);
  EXPECT_EQ(none.environment(none.take()), Env{});
}

// ------------------------------------------------------------------ Slurm

TEST(Slurm, OptionsAreCheckedBeforeSubmission) {
  const auto check = [](SlurmOptions o) { return error_of([&] { validate(o); }); };
  SlurmOptions ok;
  for (const char* t : {"30", "30:00", "2:00:00", "1-12", "1-12:30", "1-12:30:00", "UNLIMITED"}) {
    ok.time = t;
    EXPECT_EQ(check(ok), "(no error)") << t;
  }
  for (const char* t : {"0", "1:60", "1-24", "2h", "-1"}) {
    SlurmOptions bad;
    bad.time = t;
    EXPECT_NE(check(bad).find("is not a time sbatch takes"), std::string::npos) << t;
  }
  SlurmOptions mem;
  mem.mem = "4GB";
  EXPECT_NE(check(mem).find("--mem '4GB' is not a memory size"), std::string::npos);
  SlurmOptions extra;
  extra.extra = {"qos=long"};
  EXPECT_NE(check(extra).find("must be one sbatch option starting with --"), std::string::npos);
  SlurmOptions throttle;
  throttle.throttle = -1;
  EXPECT_NE(check(throttle).find("--throttle must be >= 0"), std::string::npos);
}

TEST(Slurm, ArrayScriptCarriesTheOptionsAndLogsBesideEachCell) {
  const auto dir = fresh_dir("slurm-array");
  SlurmOptions o;
  o.partition = "gpu";
  o.account = "lab";
  o.time = "4:00:00";
  o.mem = "16G";
  o.throttle = 8;
  o.gpus_per_cell = 1;
  o.extra = {"--qos=long"};
  const auto script = write_slurm_array({"pln-x", dir, {(dir / "a").string(), (dir / "b").string()},
                                         {"echo a", "echo b"}, 4, "pln grid x"}, o);
  const auto text = slurp(script);
  for (const char* line : {"#SBATCH --array=1-2%8\n", "#SBATCH --cpus-per-task=4\n", "#SBATCH --partition=gpu\n",
                           "#SBATCH --account=lab\n", "#SBATCH --time=4:00:00\n", "#SBATCH --mem=16G\n",
                           "#SBATCH --gres=gpu:1\n", "#SBATCH --qos=long\n", "#SBATCH --requeue\n",
                           ">> \"$cell/run.log\" 2>&1"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_EQ(slurp(dir / "cells.txt"), (dir / "a").string() + "\n" + (dir / "b").string() + "\n");
  EXPECT_EQ(slurp(dir / "commands.txt"), "echo a\necho b\n");
  fs::remove_all(dir);
}

// CUDA cells: one GPU per Slurm task, the device passed to each cell; the
// device is not a cell setting, so cells done on the CPU stay done; a local
// grid refuses a GPU this machine lacks before running anything.
TEST(Slurm, CudaCellsRequestAGpuAndCellsDoneElsewhereStayDone) {
  const auto& e = find_experiment("fourier");
  const auto dir = fresh_dir("slurm-cuda");
  fs::copy(smoke_grid(), dir / "grid", fs::copy_options::recursive);
  const auto status = grid_status(e, "smoke", dir / "grid");
  fs::remove(dir / "grid" / status.cells[3].first / "summary.json");
  GridRequest request;
  request.preset = "smoke";
  request.out = dir / "grid";
  request.emit = "slurm";
  request.device = "cuda";
  EXPECT_EQ(run_grid(e, request), 0);
  EXPECT_NE(slurp(dir / "grid" / "grid.slurm").find("#SBATCH --gres=gpu:1\n"), std::string::npos);
  const auto commands = slurp(dir / "grid" / "commands.txt");
  EXPECT_EQ(std::count(commands.begin(), commands.end(), '\n'), 1) << commands;  // the one cell not done
  EXPECT_NE(commands.find("--set device=cuda"), std::string::npos) << commands;
  EXPECT_NE(commands.find(status.cells[3].first), std::string::npos) << commands;
  request.device = "cpu";
  fs::remove(dir / "grid" / "grid.slurm");
  EXPECT_EQ(run_grid(e, request), 0);
  EXPECT_EQ(slurp(dir / "grid" / "grid.slurm").find("--gres"), std::string::npos);
  request.device = "gpu";
  EXPECT_NE(error_of([&] { run_grid(e, request); }).find("device 'gpu': expected cpu, cuda or cuda:N"), std::string::npos);
  request.emit = "";
  request.device = "cuda:" + std::to_string(torch::cuda::device_count());
  EXPECT_NE(error_of([&] { run_grid(e, request); }).find("device '" + request.device + "': "), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "grid" / status.cells[3].first / "summary.json"));
  fs::remove_all(dir);
}

// -------------------------------------------------------------- processes

TEST(Process, SpawnSetsTheChildsEnvironmentOnly) {
  const auto dir = fresh_dir("spawn-env");
  ::setenv("PLN_SPAWN_KEPT", "kept", 1);
  const pid_t pid = spawn({"/bin/sh", "-c", "echo \"$CUDA_VISIBLE_DEVICES $PLN_SPAWN_KEPT\""}, dir / "log",
                          {{"CUDA_VISIBLE_DEVICES", "3"}});
  EXPECT_EQ(wait_child(pid).second, 0);
  EXPECT_EQ(slurp(dir / "log"), "3 kept\n");
  const char* parent = std::getenv("CUDA_VISIBLE_DEVICES");
  EXPECT_TRUE(parent == nullptr || std::string(parent) != "3");
  ::unsetenv("PLN_SPAWN_KEPT");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pln::exp
