// Shipped results: packing a finished grid, checking it against the code's
// grid definition, and the documentation's generated tables.

#include <gtest/gtest.h>

#include "experiment_helpers.h"

#include <common/cell_state.h>
#include <common/config.h>
#include <common/process.h>
#include <common/csv.h>
#include <common/doc_tables.h>
#include <common/experiment.h>
#include <common/grid.h>
#include <torch/torch.h>
#include <common/results.h>
#include <common/run.h>
#include <common/schema.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pln::exp {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::fresh_dir;

using test::slurp;

std::string joined(const std::vector<std::string>& lines) {
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  return all;
}

// The fourier smoke grid (4 cells of a few hundred steps), run once, in this
// process, for the tests below: what `pln grid fourier --preset smoke` leaves.
const fs::path& smoke_grid() {
  static const fs::path dir = [] {
    const auto d = fresh_dir("results-grid");
    const auto& e = find_experiment("fourier");
    const auto& spec = find_grid(e, "smoke");
    const auto cells = expand_grid(spec);
    for (const auto& cell : cells) {
      RunRequest request;
      request.preset = spec.preset;
      request.sets = cell.sets;
      request.out = d / cell.id;
      request.threads = 1;
      run_experiment(e, request);
    }
    std::ofstream(d / "grid.json") << grid_manifest(e, "smoke").dump(2);
    std::ofstream(d / "records.csv") << to_csv(collect_records(spec, cells, d));
    return d;
  }();
  return dir;
}

TEST(Results, PackKeepsWhatPlotAndValidateNeed) {
  const auto dest = fresh_dir("results-pack") / "fourier-smoke";
  const auto bytes = pack_results({smoke_grid(), dest, ""});
  EXPECT_GT(bytes, 0u);
  for (const char* file : {"grid.json", "records.csv", "provenance.json"}) EXPECT_TRUE(fs::exists(dest / file)) << file;
  const auto provenance = Config::parse(slurp(dest / "provenance.json"));
  EXPECT_EQ(provenance.at("experiment"), "fourier");
  EXPECT_EQ(provenance.at("cells"), 4);
  EXPECT_EQ(provenance.at("threads"), 1);
  EXPECT_EQ(provenance.at("revision"), source_revision());
  EXPECT_FALSE(provenance.at("machine").get<std::string>().empty());
  // The per-cell files the figures draw come along; checkpoints, logs and other curves do not.
  const auto inputs = provenance.at("figure_inputs").get<std::vector<std::string>>();
  ASSERT_EQ(inputs.size(), 2u);  // the best LN and PLN(4) fit at the largest width and K
  for (const auto& file : inputs) EXPECT_TRUE(fs::exists(dest / file)) << file;
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dest)) files += entry.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 3u + inputs.size());
  // The compact folder validates, with no note (the code's grid is the one that ran), and plots.
  std::vector<std::string> notes;
  EXPECT_TRUE(check_results(dest, &notes).empty());
  EXPECT_TRUE(notes.empty()) << joined(notes);
  const auto out = fresh_dir("results-pack-plot");
  find_experiment("fourier").plot_grid(dest, read_csv(dest / "records.csv"), out);
  EXPECT_TRUE(fs::exists(out / "fits.png"));
  EXPECT_TRUE(fs::exists(out / "slopes.md"));
  // Packed again over itself, the folder is replaced whole: a file an earlier
  // pack left (a figure input no longer drawn) is gone, and nothing is left beside it.
  fs::create_directories(dest / "0000_stale");
  std::ofstream(dest / "0000_stale" / "fit.csv") << "x,y\n";
  EXPECT_EQ(pack_results({smoke_grid(), dest, ""}), bytes);
  EXPECT_FALSE(fs::exists(dest / "0000_stale"));
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(dest.parent_path())) entries += entry.exists() ? 1 : 0;
  EXPECT_EQ(entries, 1u);
  fs::remove_all(dest.parent_path());
  fs::remove_all(out);
}

TEST(Results, PackRefusesAnUnfinishedGridOrAMissingCurve) {
  const auto grid = fresh_dir("results-unfinished");
  fs::copy(smoke_grid(), grid, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  auto records = read_csv(grid / "records.csv");
  records.rows.pop_back();
  std::ofstream(grid / "records.csv") << to_csv(records);
  EXPECT_NE(error_of([&] { pack_results({grid, grid / "packed", ""}); }).find("the grid is unfinished (3 of 4 cells"),
            std::string::npos);
  fs::copy_file(smoke_grid() / "records.csv", grid / "records.csv", fs::copy_options::overwrite_existing);
  const auto input = find_experiment("fourier").figure_inputs(read_csv(grid / "records.csv")).front();
  fs::remove(grid / input);
  EXPECT_NE(error_of([&] { pack_results({grid, grid / "packed", ""}); }).find("cannot open"), std::string::npos);
  fs::remove_all(grid);
}

TEST(Results, ValidateNotesAGridOrPresetChangedSince) {
  const auto dir = fresh_dir("results-changed");
  fs::copy(smoke_grid() / "grid.json", dir / "grid.json");
  // A records.csv made when the smoke preset trained for 200 steps.
  auto records = read_csv(smoke_grid() / "records.csv");
  for (auto& row : records.rows) row[records.column("steps")] = "200";
  std::ofstream(dir / "records.csv") << to_csv(records);
  std::vector<std::string> notes;
  EXPECT_TRUE(check_results(dir, &notes).empty());  // a note, not a failure
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("the preset of grid 'smoke' of fourier has changed since these records (4 of 4 cells): "
                          "steps is 200 in the records and 300 in the code"), std::string::npos) << notes[0];
  // A manifest whose cells the code no longer defines.
  auto manifest = Config::parse(slurp(dir / "grid.json"));
  manifest["cells"][0]["set"][0] = "layer=relu";
  std::ofstream(dir / "grid.json") << manifest.dump();
  notes.clear();
  EXPECT_TRUE(check_results(dir, &notes).empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("grid 'smoke' of fourier has changed since these records: 4 cells today, 4 in grid.json, "
                          "1 of them defined otherwise"), std::string::npos) << notes[0];
  fs::remove_all(dir);
}

// ------------------------------------------------------------ grid status

size_t count_of(const GridStatus& s, CellState state) { return s.count(state); }

TEST(GridStatus, FreshHalfDoneFailedAndFinishedGrids) {
  const auto& e = find_experiment("fourier");
  const auto dir = fresh_dir("grid-status");
  // Fresh: nothing on disk yet, every cell pending.
  auto status = grid_status(e, "smoke", dir / "grid");
  EXPECT_EQ(status.cells.size(), 4u);
  EXPECT_EQ(count_of(status, CellState::kPending), 4u);
  EXPECT_NE(status.to_text().find("4 cells: 0 done, 0 running, 0 failed, 4 pending"), std::string::npos);
  // Finished.
  fs::copy(smoke_grid(), dir / "grid", fs::copy_options::recursive);
  status = grid_status(e, "smoke", dir / "grid");
  EXPECT_EQ(count_of(status, CellState::kDone), 4u);
  const auto cell = [&](size_t i) { return dir / "grid" / status.cells[i].first; };
  // Half done: one cell failed (its log's last line says why), one running
  // here, one interrupted (its process gone), one finished.
  fs::remove(cell(0) / "summary.json");
  std::ofstream(cell(0) / "run.log") << "training...\npln: fourier: something broke\n";
  fs::remove(cell(1) / "summary.json");
  const pid_t live = spawn({"/bin/sh", "-c", "sleep 60", status.cells[1].first}, dir / "sleep.log");
  {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::ofstream(cell(1) / "running.json") << Config{{"host", host}, {"pid", live}, {"started", "now"}}.dump();
    fs::remove(cell(2) / "summary.json");
    std::ofstream(cell(2) / "running.json") << Config{{"host", host}, {"pid", 999999999}, {"started", "then"}}.dump();
  }
  status = grid_status(e, "smoke", dir / "grid");
  ::kill(live, SIGKILL);
  wait_child(live);
  EXPECT_EQ(count_of(status, CellState::kFailed), 1u);
  EXPECT_EQ(count_of(status, CellState::kRunning), 1u);
  EXPECT_EQ(count_of(status, CellState::kPending), 1u);
  EXPECT_EQ(count_of(status, CellState::kDone), 1u);
  EXPECT_EQ(status.cells[0].second.detail, "pln: fourier: something broke");
  EXPECT_NE(status.cells[1].second.detail.find("pid " + std::to_string(live)), std::string::npos);
  EXPECT_NE(status.cells[2].second.detail.find("interrupted"), std::string::npos);
  const auto json = status.to_json();
  EXPECT_EQ(json.at("failed"), 1);
  EXPECT_EQ(json.at("by_cell")[0].at("state"), "failed");
  // A marker of another host is taken at its word.
  std::ofstream(cell(2) / "running.json") << Config{{"host", "elsewhere"}, {"pid", 1}, {"started", "then"}}.dump();
  EXPECT_EQ(cell_status(cell(2), false).state, CellState::kRunning);
  fs::remove_all(dir);
}

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

// ------------------------------------------------------------ doc tables

struct DocFixture {
  fs::path root;
  // Stands for `pln plot`: writes table.md with the row count of results/<name>/rows.txt.
  static void plot(const fs::path& dir, const fs::path& out) {
    fs::create_directories(out);
    std::ofstream(out / "table.md") << "| rows |\n|---|\n| " << slurp(dir / "rows.txt") << " |\n";
  }
};

TEST(DocTables, MatchingTablesPassAndAnEditedOneFailsNamingTheLine) {
  const auto root = fresh_dir("doc-tables");
  fs::create_directories(root / "results" / "demo");
  fs::create_directories(root / "docs");
  std::ofstream(root / "results" / "demo" / "rows.txt") << "3";
  const std::string doc = "# Doc\n\nText.\n\n<!-- table results/demo table.md -->\n| rows |\n|---|\n| 3 |\n"
                          "<!-- end table -->\n\nMore text.\n";
  std::ofstream(root / "docs" / "a.md") << doc;
  const auto docs = documentation_files(root);
  ASSERT_EQ(docs.size(), 1u);
  const auto tables = find_doc_tables(docs);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].line, 5u);
  EXPECT_EQ(tables[0].results, "results/demo");
  EXPECT_EQ(tables[0].file, "table.md");
  const auto scratch = fresh_dir("doc-tables-scratch");
  EXPECT_TRUE(sync_doc_tables(root, docs, scratch, false, DocFixture::plot).problems.empty());

  // Edited by hand: 3 -> 4 on line 8.
  std::string edited = doc;
  edited.replace(edited.find("| 3 |"), 5, "| 4 |");
  std::ofstream(root / "docs" / "a.md") << edited;
  const auto problems = sync_doc_tables(root, docs, scratch, false, DocFixture::plot).problems;
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("a.md:5: the table from results/demo/table.md disagrees with its records "
                             "(line 8: the doc has '| 4 |', the records give '| 3 |')"), std::string::npos)
      << problems[0];
  // --update rewrites the block and leaves the rest of the file as it was.
  const auto updated = sync_doc_tables(root, docs, scratch, true, DocFixture::plot);
  EXPECT_TRUE(updated.problems.empty());
  ASSERT_EQ(updated.updated.size(), 1u);
  EXPECT_EQ(slurp(root / "docs" / "a.md"), doc);
  fs::remove_all(root);
  fs::remove_all(scratch);
}

TEST(DocTables, MissingFoldersFilesAndBadMarkersAreNamed) {
  const auto root = fresh_dir("doc-tables-bad");
  fs::create_directories(root / "results" / "demo");
  std::ofstream(root / "results" / "demo" / "rows.txt") << "1";
  std::ofstream(root / "README.md") << "<!-- table results/gone table.md -->\nx\n<!-- end table -->\n"
                                       "<!-- table results/demo other.md -->\nx\n<!-- end table -->\n";
  const auto scratch = fresh_dir("doc-tables-bad-scratch");
  const auto problems =
      sync_doc_tables(root, documentation_files(root), scratch, false, DocFixture::plot).problems;
  ASSERT_EQ(problems.size(), 2u);
  const auto all = joined(problems);
  EXPECT_NE(all.find("README.md:1: results/gone: no such results folder"), std::string::npos) << all;
  EXPECT_NE(all.find("README.md:4: `pln plot results/demo` writes no other.md"), std::string::npos) << all;
  std::ofstream(root / "README.md") << "<!-- table results/demo table.md -->\nx\n";
  EXPECT_NE(error_of([&] { find_doc_tables({root / "README.md"}); }).find("README.md:1: the table is never closed"),
            std::string::npos);
  fs::remove_all(root);
  fs::remove_all(scratch);
}

}  // namespace
}  // namespace pln::exp
