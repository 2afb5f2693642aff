// The records (experiments/records/): CSV and the step log, the schema check and
// non-finite metrics, packing a finished grid, grid and cell state, the
// documentation's generated tables, gnuplot figures, and the demo's records.

#include <gtest/gtest.h>

#include "experiment_helpers.h"

#include <demo/demo.h>
#include <pln/kernels.h>
#include <records/csv.h>
#include <system/atomic_file.h>
#include <system/directory.h>
#include <records/doc_tables.h>
#include <records/gnuplot.h>
#include <sweep/grid_state.h>
#include <records/json.h>
#include <sweep/pack.h>
#include <records/run_state.h>
#include <records/safetensors.h>
#include <system/printable.h>
#include <sweep/check_results.h>
#include <records/statistics.h>
#include <records/step_log.h>
#include <system/provenance.h>
#include <run/run.h>
#include <spec/config.h>
#include <spec/experiment.h>
#include <sweep/cells.h>
#include <system/process.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace pln::exp {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::fresh_dir;
using test::slurp;
using test::smoke_grid;

std::string joined(const std::vector<std::string>& lines) {
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  return all;
}

// ---------------------------------------------------------------------- CSV

TEST(Csv, RoundTripsQuotedFields) {
  CsvTable t;
  t.header = {"cell", "note"};
  t.rows = {{"a", "has, comma"}, {"b", "has \"quotes\"\nand a newline"}, {"c", ""}};
  const auto back = parse_csv(to_csv(t), "test");
  EXPECT_EQ(back.header, t.header);
  EXPECT_EQ(back.rows, t.rows);
}

TEST(Csv, OlderFilesWithFewerColumnsStillRead) {
  const auto t = parse_csv("cell,rel_l2\nx,0.5\n", "old.csv");
  EXPECT_EQ(t.get(0, "rel_l2"), "0.5");
  EXPECT_EQ(t.get(0, "added_later"), "");
}

TEST(Csv, CorruptFilesNameTheProblem) {
  EXPECT_NE(error_of([] { parse_csv("a,b\n1,2,3\n", "bad.csv"); }).find("bad.csv: row 1 has 3 fields, the header has 2"), std::string::npos);
  EXPECT_NE(error_of([] { parse_csv("a,b\n\"1,2\n", "bad.csv"); }).find("bad.csv: unterminated quoted field"), std::string::npos);
  EXPECT_NE(error_of([] { read_csv("/nonexistent/records.csv"); }).find("cannot open /nonexistent/records.csv"), std::string::npos);
}

TEST(Csv, StepLogFlushesWholeFiles) {
  const auto dir = fresh_dir("steplog");
  {
    StepLog log(dir / "train.csv", {"step", "loss"}, 2);
    log.add({1, 0.5});
    EXPECT_FALSE(fs::exists(dir / "train.csv"));  // nothing written before the first flush
    log.add({2, NAN});
    const auto t = read_csv(dir / "train.csv");
    ASSERT_EQ(t.rows.size(), 2u);
    EXPECT_EQ(t.rows[1][1], "");  // NaN is a missing value
  }
  fs::remove_all(dir);
}

TEST(Csv, NumberValueAndMedianOfRecordCells) {
  EXPECT_EQ(number_value("0.5"), 0.5);
  EXPECT_EQ(number_value("-3e-4"), -3e-4);
  EXPECT_TRUE(std::isnan(number_value("")));      // a missing value
  EXPECT_TRUE(std::isnan(number_value("C")));     // an axis label, not a number
  EXPECT_TRUE(std::isnan(number_value("1.5x")));  // not wholly a number
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 2.0, 3.0}), 2.5);
  EXPECT_TRUE(std::isnan(median({})));
}

// ----------------------------------------------------------------- schema

TEST(Schema, FlagsMissingMetricsAndRowCounts) {
  const auto dir = fresh_dir("schema");
  std::ofstream(dir / "grid.json") << R"({"experiment":"pinn","n_cells":2,"axes":["model"],"cells":[{"id":"0_model=LN"},{"id":"1_model=PLN4"}]})";
  std::ofstream(dir / "records.csv") << "cell,model,rel_l2,mse,final_loss,iters,seconds,iters_per_s\n0_model=LN,LN,,1,1,1,1,1\n";
  const auto problems = check_results(dir);
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_NE(all.find("1 rows, the grid has 2 cells"), std::string::npos) << all;
  EXPECT_NE(all.find("cell '0_model=LN': rel_l2 is '', not a finite number"), std::string::npos) << all;
  std::ofstream(dir / "grid.json") << R"({"experiment":"pinn","axes":["model"]})";
  const auto malformed = check_results(dir);
  ASSERT_EQ(malformed.size(), 1u);
  EXPECT_NE(malformed[0].find("grid.json: malformed"), std::string::npos) << malformed[0];
  fs::remove_all(dir);
}

// ----------------------------------------------------- non-finite metrics

// A finished run's directory for `experiment`: config.json and a summary.json
// holding every metric (1.5) with `changes` applied.
fs::path summary_dir(const std::string& name, const std::string& experiment, const Config& changes) {
  const auto dir = test::fresh_dir(name);
  Config summary = Config::object();
  for (const auto& metric : find_experiment(experiment).metrics) summary[metric] = 1.5;
  for (const auto& item : changes.items()) summary[item.key()] = item.value();
  std::ofstream(dir / "config.json") << Config{{"experiment", experiment}}.dump();
  write_summary(dir, experiment, summary);
  return dir;
}

std::string problems_of(const fs::path& dir) { return joined(check_results(dir)); }

TEST(NonFiniteMetrics, SummaryAndRecordsWriteThemAsStrings) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const auto dir = test::fresh_dir("non-finite-write");
  const Config written = write_summary(dir, "pinn", {{"ntk_cond", nan}, {"a", inf}, {"b", -inf}, {"c", 2.5},
                                                     {"rows", Config::array({Config{{"x", nan}}})}});
  const auto text = test::slurp(dir / "summary.json");
  EXPECT_NE(text.find("\"ntk_cond\": \"nan\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"a\": \"inf\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"b\": \"-inf\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"x\": \"nan\""), std::string::npos) << text;
  EXPECT_EQ(text.find("null"), std::string::npos) << text;
  EXPECT_EQ(written.at("c").get<double>(), 2.5);
  EXPECT_TRUE(std::isnan(*metric_number(read_json_file(dir / "summary.json").at("ntk_cond"))));
  EXPECT_EQ(*metric_number(Config("-inf")), -inf);
  EXPECT_TRUE(std::isnan(*metric_number(Config())));  // null: NaN in older summaries
  EXPECT_FALSE(metric_number(Config("big")).has_value());

  // records.csv takes the summary's text.
  GridSpec spec{"one cell", "smoke", Config::object(), {{"seed", {{"0", Config{{"seed", 0}}}}}}};
  const auto cells = expand_grid(spec);
  ASSERT_EQ(cells.size(), 1u);
  fs::create_directories(dir / cells[0].id);
  write_run_config(dir / cells[0].id, "pinn", spec.preset, cells[0].sets, 1, {{"seed", 0}});
  write_summary(dir / cells[0].id, "pinn", {{"ntk_cond", nan}, {"a", inf}});
  const CsvTable records = collect_records(spec, cells, dir);
  ASSERT_EQ(records.rows.size(), 1u);
  EXPECT_EQ(records.get(0, "ntk_cond"), "nan");
  EXPECT_EQ(records.get(0, "a"), "inf");
  fs::remove_all(dir);
}

TEST(NonFiniteMetrics, SchemaAcceptsThemOnlyWhereTheExperimentDeclaresThem) {
  const auto& pinn = find_experiment("pinn");
  ASSERT_NE(std::find(pinn.may_be_non_finite.begin(), pinn.may_be_non_finite.end(), "ntk_cond"),
            pinn.may_be_non_finite.end());
  const auto& undeclared = pinn.metrics.front();
  ASSERT_EQ(std::find(pinn.may_be_non_finite.begin(), pinn.may_be_non_finite.end(), undeclared),
            pinn.may_be_non_finite.end());

  const auto declared = summary_dir("non-finite-declared", "pinn", {{"ntk_cond", "nan"}});
  EXPECT_EQ(problems_of(declared), "");
  const auto old_null = summary_dir("non-finite-null", "pinn", {{"ntk_cond", nullptr}});
  EXPECT_EQ(problems_of(old_null), "");  // as older summaries wrote NaN

  const auto metric = summary_dir("non-finite-metric", "pinn", {{undeclared, "nan"}});
  auto all = problems_of(metric);
  EXPECT_NE(all.find(undeclared + " is \"nan\", not a finite number (and pinn does not declare it may be)"),
            std::string::npos) << all;
  const auto other = summary_dir("non-finite-other", "pinn", {{"ntk_eff_rank_90", "inf"}});
  all = problems_of(other);
  EXPECT_NE(all.find("ntk_eff_rank_90 is \"inf\", not a finite number"), std::string::npos) << all;
  const auto text = summary_dir("non-finite-text", "pinn", {{undeclared, "fast"}});
  all = problems_of(text);
  EXPECT_NE(all.find(undeclared + " is \"fast\", not a number"), std::string::npos) << all;
  for (const auto& d : {declared, old_null, metric, other, text}) fs::remove_all(d);
}

TEST(NonFiniteMetrics, RecordsOfAGridFollowTheSameRule) {
  const auto dir = test::fresh_dir("non-finite-grid");
  const auto& pinn = find_experiment("pinn");
  Config manifest = {{"experiment", "pinn"}, {"grid", "none-such"}, {"axes", {"seed"}}, {"n_cells", 1},
                     {"cells", {{{"id", "0_seed=0"}, {"set", {"seed=0"}}}}}};
  std::ofstream(dir / "grid.json") << manifest.dump();
  const auto write_records = [&](const std::string& metric, const std::string& value) {
    CsvTable t{{"cell", "seed"}, {{"0_seed=0", "0"}}};
    for (const auto& m : pinn.metrics) {
      t.header.push_back(m);
      t.rows[0].push_back(m == metric ? value : "1.5");
    }
    std::ofstream(dir / "records.csv") << to_csv(t);
  };
  write_records(pinn.metrics.front(), "1.5");
  EXPECT_EQ(problems_of(dir), "");
  write_records(pinn.metrics.front(), "nan");
  const auto all = problems_of(dir);
  EXPECT_NE(all.find(pinn.metrics.front() + " is 'nan', not a finite number"), std::string::npos) << all;
  write_records(pinn.metrics.front(), "");  // null in an older summary
  EXPECT_NE(problems_of(dir).find("not a finite number"), std::string::npos);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- packing

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
  // Records short of the finished cells (a grid stopped between a cell's
  // summary and its records) are rebuilt from the cells...
  EXPECT_GT(pack_results({grid, grid / "packed", ""}), 0u);
  EXPECT_EQ(read_csv(grid / "packed" / "records.csv").rows.size(), 4u);
  // ...and a cell without its summary leaves the grid unfinished.
  std::ofstream(grid / "records.csv") << to_csv(records);
  fs::remove(grid / read_csv(smoke_grid() / "records.csv").rows.back()[0] / "summary.json");
  EXPECT_NE(error_of([&] { pack_results({grid, grid / "packed", ""}); }).find("the grid is unfinished (3 of 4 cells"),
            std::string::npos);
  // Records that list a cell without its summary disagree with the finished cells.
  fs::copy_file(smoke_grid() / "records.csv", grid / "records.csv", fs::copy_options::overwrite_existing);
  const auto last = read_csv(smoke_grid() / "records.csv").rows.back()[0];
  EXPECT_NE(error_of([&] { pack_results({grid, grid / "packed", ""}); })
                .find("cell '" + last + "' is listed, but"), std::string::npos);
  fs::copy_file(smoke_grid() / last / "summary.json", grid / last / "summary.json");
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

// A finished run set aside in .replaced is deleted only as pln's marker
// lists it (each file with its size); a marker planted with a matching
// config.json and summary.json deletes nothing of the directory's own files
// (a fresh start moves them aside), and nothing planted beside the listed
// files.
TEST(Untrusted, SetAsideDeletesOnlyWhatPlnListed) {
  const auto& fourier = find_experiment("fourier");
  const Config config = resolve_config(fourier, "smoke", {});
  const auto dir = fresh_dir("untrusted-set-aside");
  const auto finished_record = [&](const fs::path& where) {
    fs::create_directories(where);
    std::ofstream(where / "config.json") << Config{{"experiment", "fourier"}, {"config", config}}.dump();
    std::ofstream(where / "summary.json") << Config{{"experiment", "fourier"}}.dump();
  };

  // Planted: a marker that lists the user's files, beside them.
  const auto planted = dir / "planted";
  finished_record(planted / ".replaced");
  std::ofstream(planted / "notes.txt") << "mine\n";
  std::ofstream(planted / "thesis.tex") << "mine too\n";
  std::ofstream(planted / ".replaced" / ".pln-set-aside")
      << Config{{"files", {{"../notes.txt", 5}, {"thesis.tex", 9}}}, {"folders", Config::array()}}.dump();
  {
    auto taken = take_run_directory(planted, "fourier", config, false, false);
    taken.finish();
  }
  std::vector<std::string> kept;
  for (const auto& entry : fs::recursive_directory_iterator(planted)) {
    if (entry.path().filename() == "notes.txt" || entry.path().filename() == "thesis.tex") {
      kept.push_back(entry.path().filename().string() + ": " + slurp(entry.path()));
    }
  }
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<std::string>{"notes.txt: mine\n", "thesis.tex: mine too\n"}));

  // pln's own: the listed files go, a file planted beside them and a listed
  // file whose size changed stay, and are reported.
  const auto run = dir / "run";
  finished_record(run);
  fs::create_directories(run / "figures");
  std::ofstream(run / "figures" / "loss.svg") << "<svg/>";
  std::ofstream(run / "train.csv") << "step,loss\n";
  auto taken = take_run_directory(run, "fourier", config, false, true);
  EXPECT_FALSE(fs::exists(run / "summary.json"));
  EXPECT_TRUE(fs::exists(run / ".replaced" / "figures" / "loss.svg"));
  std::ofstream(run / ".replaced" / "planted.txt") << "not pln's";
  std::ofstream(run / ".replaced" / "train.csv", std::ios::app) << "1,2\n";
  testing::internal::CaptureStdout();
  taken.finish();
  const auto said = testing::internal::GetCapturedStdout();
  EXPECT_NE(said.find("left 2 entries (pln deletes only the files it set aside there, as it listed them): "
                      "planted.txt, train.csv"), std::string::npos) << said;
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(run / ".replaced")) left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"planted.txt", "train.csv"}));
  fs::remove_all(dir);
}

// Files in a run or grid directory are written and read relative to a
// descriptor of their folder, with O_NOFOLLOW: a write lands in the folder
// held even when its path is swapped for a link meanwhile, a link planted as
// the file is replaced and never written through, and a link planted as a
// sub-folder or a file to read is refused by name.
TEST(Untrusted, FilesAreOpenedRelativeToTheirFolderNeverThroughALink) {
  const auto dir = fresh_dir("untrusted-directory");
  fs::create_directories(dir / "run");
  fs::create_directories(dir / "elsewhere");
  const Directory run(dir / "run");
  fs::rename(dir / "run", dir / "moved");
  fs::create_directory_symlink(dir / "elsewhere", dir / "run");
  run.write_atomic("config.json", "{}\n");
  EXPECT_EQ(slurp(dir / "moved" / "config.json"), "{}\n");
  EXPECT_FALSE(fs::exists(dir / "elsewhere" / "config.json"));

  std::ofstream(dir / "victim.txt") << "keep me";
  fs::create_symlink(dir / "victim.txt", dir / "moved" / "summary.json");
  write_file_atomic(dir / "moved" / "summary.json", "{}\n");
  EXPECT_EQ(slurp(dir / "victim.txt"), "keep me");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(dir / "moved" / "summary.json")));

  fs::create_directory_symlink(dir / "elsewhere", dir / "moved" / "cell");
  EXPECT_NE(error_of([&] { run.open_directory("cell"); }).find("cell: a symbolic link, not a file pln wrote; refused"),
            std::string::npos);
  fs::create_symlink(dir / "victim.txt", dir / "moved" / "eval.csv");
  EXPECT_NE(error_of([&] { run.read_regular("eval.csv", 1 << 20); }).find("eval.csv: a symbolic link"),
            std::string::npos);
  EXPECT_EQ(run.open_directory("..").read_regular("victim.txt", 1 << 20), "keep me");  // a real folder is opened
  fs::remove_all(dir);
}

// `grid --status` reads a cell's run.log as pln wrote it or not at all: never
// through a link planted in its place, never blocking on a FIFO, and only its
// last kTailBytes, however long the file.
TEST(Untrusted, StatusReadsOnlyTheEndOfARegularRunLog) {
  const auto dir = fresh_dir("untrusted-run-log");
  std::ofstream(dir / "secret.txt") << "the secret\n";
  fs::create_directories(dir / "link");
  fs::create_symlink(dir / "secret.txt", dir / "link" / "run.log");
  EXPECT_EQ(tail_of(dir / "link" / "run.log", 5), "");
  EXPECT_EQ(cell_status(dir / "link", false).state, CellState::kPending);
  fs::create_directories(dir / "fifo");
  ASSERT_EQ(::mkfifo((dir / "fifo" / "run.log").c_str(), 0600), 0);
  EXPECT_EQ(cell_status(dir / "fifo", false).state, CellState::kPending);  // returns: no reader blocks on it
  fs::create_directories(dir / "long");
  std::ofstream(dir / "long" / "run.log") << "first line\n";
  fs::resize_file(dir / "long" / "run.log", std::uintmax_t{4} << 30);  // sparse: no disk, no time
  std::ofstream(dir / "long" / "run.log", std::ios::app) << "\nlast line\n";
  EXPECT_EQ(tail_of(dir / "long" / "run.log", 100000).size(), kTailBytes);
  const auto status = cell_status(dir / "long", false);
  EXPECT_EQ(status.state, CellState::kFailed);
  EXPECT_EQ(status.detail, "last line");
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

// ---------------------------------------------------------------- figures

// Figures a reader can read: a log axis of a few values has a labelled tick at
// each (gnuplot's own fall on powers of the base, none within a small grid's
// widths), and keys sit outside the plots, where they cover no data.
TEST(GnuplotFigures, LogAxesTickThePlottedValuesAndKeysStayOffTheData) {
  const auto dir = fresh_dir("gnuplot-figures");
  const auto fourier = parse_csv("model,K,width,lr,seed,rel_l2,cell\n"
                                 "LN,2,32,0.01,0,0.3,a\nLN,2,16,0.01,0,0.4,b\n"
                                 "PLN(4),2,32,0.01,0,0.05,c\nPLN(4),2,16,0.01,0,0.1,d\n",
                                 "records.csv");
  find_experiment("fourier").plot_grid(dir, fourier, dir / "fourier");
  const auto widths = slurp(dir / "fourier" / "error_vs_width.gp");
  EXPECT_NE(widths.find("set logscale x\nset xtics ('16' 16, '32' 32)\nset xrange [12.8:40]\n"), std::string::npos)
      << widths;
  EXPECT_NE(widths.find("set key at screen"), std::string::npos) << widths;  // one key, under the panels
  EXPECT_NE(widths.find("unset key"), std::string::npos) << widths;

  const auto vit = parse_csv("norm,group,labels,best_test_top1,test_top5\npln,4,clean,0.3,0.8\npln,8,clean,0.35,0.85\n"
                             "ln,,clean,0.25,0.8\n",
                             "records.csv");
  find_experiment("vit").plot_grid(dir, vit, dir / "vit");
  const auto groups = slurp(dir / "vit" / "accuracy_vs_group.gp");
  EXPECT_NE(groups.find("set xtics ('4' 4, '8' 8)"), std::string::npos) << groups;
  EXPECT_NE(groups.find("set key at screen"), std::string::npos) << groups;
  // LN alone still draws (its reference line over a plain log range).
  find_experiment("vit").plot_grid(dir, parse_csv("norm,group,labels,best_test_top1,test_top5\nln,,clean,0.25,0.8\n",
                                                  "records.csv"),
                                   dir / "vit-ln");
  EXPECT_TRUE(fs::exists(dir / "vit-ln" / "accuracy_vs_group.png"));

  // Two epochs: integer ticks, not 1.2, 1.4...
  std::ofstream(dir / "epochs.csv") << "epoch,train_loss,train_acc,test_acc,lr,seconds\n1,2,0.5,0.4,0.1,1\n2,1,0.6,0.5,0,1\n";
  find_experiment("cnn").plot_run(dir, dir / "cnn");
  const auto epochs = slurp(dir / "cnn" / "accuracy.gp");
  EXPECT_NE(epochs.find("set xtics 1\n"), std::string::npos) << epochs;
  EXPECT_NE(epochs.find("set key at screen"), std::string::npos) << epochs;
  fs::remove_all(dir);
}

// ---------------------------------------------------------- untrusted input

TEST(Untrusted, GnuplotLiteralsKeepEveryCharacterInside) {
  // Only a line break could end a single-quoted literal early; it and every
  // other control character become visible text.
  EXPECT_EQ(gnuplot_quote("LN\nsystem(\"touch x\")\r\t"), "'LN\\x0asystem(\"touch x\")\\x0d\\x09'");
  EXPECT_EQ(gnuplot_quote("it's `cmd` @m \\"), "'it''s `cmd` @m \\'");
}

// gnuplot writes each figure into a fresh temporary file of pln's own, never
// through a `NAME.png.tmp` (or any other predictable name) planted as a link.
TEST(Untrusted, GnuplotNeverWritesThroughAPlantedLink) {
  const auto dir = fresh_dir("untrusted-gnuplot");
  std::ofstream(dir / "victim.txt") << "keep me";
  for (const char* ext : {"png", "svg"}) {
    fs::create_symlink(dir / "victim.txt", dir / (std::string("figure.") + ext + ".tmp"));
  }
  render_figure(dir / "figure", "plot x\n", 320, 240);
  EXPECT_EQ(slurp(dir / "victim.txt"), "keep me");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(dir / "figure.png")));
  EXPECT_GT(fs::file_size(dir / "figure.svg"), 0u);
  for (const auto& entry : fs::directory_iterator(dir)) {  // no temporary left behind
    EXPECT_EQ(entry.path().filename().string().rfind(kTemporaryPrefix, 0), std::string::npos) << entry.path();
  }
  fs::remove_all(dir);
}

TEST(Untrusted, JsonNestingAndSizeAreBounded) {
  EXPECT_NE(error_of([] { parse_json_text(std::string(100000, '[') + std::string(100000, ']'), "deep.json"); })
                .find("deep.json: not a pln record: JSON nested deeper than 64 levels"),
            std::string::npos);
  EXPECT_NO_THROW(parse_json_text(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'), "ok.json"));
  // A million empty objects in one array: read in one pass each way (a parser
  // that rescans the array at each object's end would take 5e11 steps).
  std::string objects = "[";
  for (int i = 0; i < 1000000; ++i) objects += "{},";
  objects.back() = ']';
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(parse_json_text(objects, "objects.json").size(), 1000000u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
  const auto dir = fresh_dir("untrusted-json");
  fs::create_directory(dir / "summary.json");
  EXPECT_NE(error_of([&] { read_json_file(dir / "summary.json"); }).find("summary.json: not a regular file"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(Untrusted, PathsFromRecordsStayInsideTheirRoot) {
  const auto root = fresh_dir("untrusted-paths");
  fs::create_directories(root / "grid" / "cell");
  fs::create_directories(root / "elsewhere");
  fs::create_directory_symlink(root / "elsewhere", root / "grid" / "link");
  EXPECT_EQ(path_inside(root / "grid", "cell/eval.csv", "records.csv"), root / "grid" / "cell/eval.csv");
  for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
           {"../../src_evil", "climbs out"}, {"/etc/passwd", "is absolute"}, {"link/eval.csv", "symbolic link"},
           {"", "is empty"}, {"cell\nx", "control character"}}) {
    EXPECT_NE(error_of([&] { path_inside(root / "grid", bad, "records.csv: row 2"); })
                  .find("records.csv: row 2: the path"), std::string::npos) << bad;
    EXPECT_NE(error_of([&] { path_inside(root / "grid", bad, "records.csv"); }).find(why), std::string::npos) << bad;
  }
  // The path is shown escaped, as printable() escapes every text from a file.
  EXPECT_NE(error_of([&] { path_inside(root / "grid", "cell\x1b[2J\n", "records.csv"); })
                .find("the path 'cell\\x1b[2J\\x0a' holds a control character"), std::string::npos);
  fs::remove_all(root);
}

TEST(Untrusted, CsvDropsAByteOrderMarkAndRefusesAHugeFile) {
  const auto table = parse_csv("\xEF\xBB\xBF" "cell,x\na,1\n", "records.csv");
  EXPECT_EQ(table.header, (std::vector<std::string>{"cell", "x"}));
  const auto dir = fresh_dir("untrusted-csv");
  std::ofstream(dir / "records.csv") << "cell\n";
  fs::resize_file(dir / "records.csv", std::uintmax_t{2} << 30);  // sparse: no disk, no time
  EXPECT_NE(error_of([&] { read_csv(dir / "records.csv"); }).find("records.csv: 2147483648 bytes, more than any pln"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(Untrusted, CsvOfTinyFieldsIsRefusedWithinItsMemoryBudget) {
  // A file of commas would take 30 times its size as a table: refused once its
  // fields pass kCsvCellsPerByte times the file, naming the file and line.
  const std::string commas = "a" + std::string(8 << 20, ',') + "\n";
  EXPECT_NE(error_of([&] { parse_csv(commas, "records.csv"); }).find("records.csv: not a pln record: its fields would take over"),
            std::string::npos);
  // A record of numbers of a few digits each is well within it.
  std::string numbers = "x,y\n";
  for (int i = 0; i < 200000; ++i) numbers += "1,2\n";
  EXPECT_EQ(parse_csv(numbers, "eval.csv").rows.size(), 200000u);
}

// AddressSanitizer's shadow, redzones and quarantine of freed blocks are
// resident too: the memory bounds below are those of the allocator pln runs
// with, so they are measured without it (and skipped in the sanitizer leg).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

// The growth of this process's peak resident memory while `work` runs, in
// bytes: the peak is reset first (clear_refs 5), then read back (VmHWM).
uint64_t peak_growth(const std::function<void()>& work) {
  const auto status_kib = [](const std::string& key) -> uint64_t {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(key + ":", 0) == 0) return std::stoull(line.substr(key.size() + 1)) * 1024;
    }
    return uint64_t{0};
  };
  std::ofstream("/proc/self/clear_refs") << "5";
  const uint64_t before = status_kib("VmRSS");
  work();
  return status_kib("VmHWM") - before;
}

// What csv.h states: reading a file of N bytes takes at most N (the text,
// already held here) + kCsvCellsPerByte * N + kCsvCellsSlack. Tried with the
// files that cost most per byte: commas, a wide header over rows of one field
// (whose rows a reader reserving the header's width would each make wide),
// and a valid table.
TEST(Untrusted, CsvPeakMemoryIsProportionalToTheFile) {
  if (kAddressSanitizer) GTEST_SKIP() << "resident memory under AddressSanitizer is not the allocator's";
  const auto limit = [](const std::string& text) { return kCsvCellsPerByte * text.size() + kCsvCellsSlack; };
  const auto try_parse = [](const std::string& text) {
    try {
      parse_csv(text, "records.csv");
    } catch (const std::runtime_error&) {
    }
  };
  const std::string commas = "a" + std::string(16 << 20, ',') + "\n";
  EXPECT_LE(peak_growth([&] { try_parse(commas); }), limit(commas));
  std::string wide = "a" + std::string(200000, ',') + "\n";
  for (int i = 0; i < 20000; ++i) wide += "x\n";
  EXPECT_LE(peak_growth([&] { try_parse(wide); }), limit(wide));
  std::string numbers = "x,y,z\n";
  for (int i = 0; i < 200000; ++i) numbers += "0.1234567890123456,2,3\n";
  EXPECT_LE(peak_growth([&] { EXPECT_EQ(parse_csv(numbers, "eval.csv").rows.size(), 200000u); }), limit(numbers));
  EXPECT_NE(error_of([&] { parse_csv(wide, "records.csv"); }).find("records.csv: row 1 has 1 fields, the header has "
                                                                    "200001"), std::string::npos);
}

TEST(Untrusted, PrintableEscapesControlsAndBrokenUtf8) {
  EXPECT_EQ(printable("cell\x1b]0;owned\x07\x1b[2J"), "cell\\x1b]0;owned\\x07\\x1b[2J");
  EXPECT_EQ(printable("a\nb\tc"), "a\\x0ab\\x09c");
  EXPECT_EQ(printable("a\tc", true), "a\tc");
  EXPECT_EQ(printable("\xc2\x9b" "2J"), "\\xc2\\x9b2J");          // C1's CSI
  EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");                 // not UTF-8
  EXPECT_EQ(printable("PLN(4) \xc3\xa9 \xe2\x80\x94"), "PLN(4) \xc3\xa9 \xe2\x80\x94");  // UTF-8 kept
  EXPECT_EQ(file_name_part("x/../../elsewhere"), "x_______elsewhere");
  EXPECT_EQ(file_name_part("random"), "random");
}

// A safetensors file as pln writes it, and each way a crafted one breaks the
// format: every field is checked and named before anything is built.
TEST(Untrusted, SafetensorsReaderChecksEveryField) {
  const std::string a(16, '\x01'), b(8, '\x02');
  const std::string file = safetensors_bytes({{"a", "F32", {2, 2}, a}, {"b", "I64", {1}, b}}, {{"format", "x"}});
  EXPECT_EQ((file.size() - 8 - 24) % 8, 0u);  // the data starts 8-byte aligned
  const auto parsed = parse_safetensors(file, "ck");
  ASSERT_EQ(parsed.tensors.size(), 2u);
  EXPECT_EQ(parsed.tensors.at("a").shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(file.substr(parsed.data_start + parsed.tensors.at("b").begin, 8), b);
  EXPECT_EQ(parsed.metadata.at("format"), "x");
  EXPECT_NO_THROW(check_tensors(parsed, {{"a", {"F32", {2, 2}}}, {"b", {"I64", {1}}}}, "ck"));
  EXPECT_NE(error_of([&] { check_tensors(parsed, {{"a", {"F32", {4}}}, {"b", {"I64", {1}}}}, "ck"); })
                .find("ck: tensor 'a' is F32 [2, 2], this run's is F32 [4]"), std::string::npos);
  EXPECT_NE(error_of([&] { check_tensors(parsed, {{"a", {"F32", {2, 2}}}}, "ck"); }).find("tensor 'b' is not one"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_tensors(parsed, {{"a", {"F32", {2, 2}}}, {"b", {"I64", {1}}}, {"c", {"U8", {}}}},
                                         "ck"); }).find("tensor 'c' is missing"), std::string::npos);
  // A header written by hand around the same 24 bytes of data.
  const auto crafted = [&](const std::string& header, const std::string& data = std::string(24, '\0')) {
    std::string out;
    for (int i = 0; i < 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return error_of([&] { parse_safetensors(out + header + data, "ck"); });
  };
  const std::string b_ok = R"("b":{"dtype":"I64","shape":[1],"data_offsets":[16,24]})";
  for (const auto& [header, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,4096]},)" + b_ok + "}", "tensor 'a': data_offsets [0, 4096]"},
           {R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"I64","shape":[1],"data_offsets":[8,16]}})", "overlap"},
           {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)" + b_ok + "}", "leave a gap"},
           {R"({"a":{"dtype":"F32","shape":[3,2],"data_offsets":[0,16]},)" + b_ok + "}", "takes 24 bytes"},
           {R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]},)" + b_ok + "}", "more than 2^64"},
           {R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,16]},)" + b_ok + "}", "shape is not a list"},
           {R"({"a":{"dtype":"Q4","shape":[4],"data_offsets":[0,16]},)" + b_ok + "}", "tensor 'a': dtype is"},
           {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[16,0]},)" + b_ok + "}", "not a range"},
           {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16],"x":1},)" + b_ok + "}", "unknown field 'x'"},
           {R"({"__metadata__":{"k":[1]},"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)" + b_ok + "}", "__metadata__.k is not a string"},
           {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", "cover 16 bytes of data, the file holds 24"},
           {R"([1,2])", "not a JSON object"}}) {
    const auto message = crafted(header);
    EXPECT_NE(message.find("ck: not a safetensors file pln can read"), std::string::npos) << header << "\n" << message;
    EXPECT_NE(message.find(why), std::string::npos) << header << "\n" << message;
  }
  EXPECT_NE(error_of([] { parse_safetensors(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10), "ck"); })
                .find("over the limit"), std::string::npos);
  EXPECT_NE(error_of([] { parse_safetensors(std::string("\x40\0\0\0\0\0\0\0{}", 10), "ck"); })
                .find("runs past the end of the file"), std::string::npos);
  EXPECT_NE(error_of([] { parse_safetensors("abc", "ck"); }).find("fewer than the 8"), std::string::npos);
}

// The header's limit, 16 MiB (eight times the biggest a pln checkpoint
// writes), holds both ways: a longer one is refused before it is parsed, and
// the writer refuses to write one no reader of pln's would read.
TEST(Untrusted, SafetensorsHeaderLimitHoldsForReaderAndWriter) {
  EXPECT_EQ(kMaxSafetensorsHeaderBytes, uint64_t{16} << 20);
  std::string over(8 + kMaxSafetensorsHeaderBytes + 8, ' ');
  const uint64_t n = kMaxSafetensorsHeaderBytes + 8;
  for (int i = 0; i < 8; ++i) over[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  over[8] = '{';
  EXPECT_NE(error_of([&] { parse_safetensors(over, "ck"); })
                .find("the header's length (16777224 bytes) is over the limit of 16777216"), std::string::npos);
  const std::string text(kMaxSafetensorsHeaderBytes, 'x');
  EXPECT_THROW(safetensors_bytes({}, {{"state", text}}), std::length_error);
  EXPECT_NO_THROW(safetensors_bytes({}, {{"state", std::string(kMaxSafetensorsHeaderBytes - 64, 'x')}}));
  // The costliest JSON per byte (an empty object each 3 bytes, about 28
  // times its text as nlohmann's values) at the limit: under half a GiB.
  if (kAddressSanitizer) GTEST_SKIP() << "resident memory under AddressSanitizer is not the allocator's";
  std::string header = "{\"a\":[";
  while (header.size() + 5 < kMaxSafetensorsHeaderBytes) header += "{},";
  header.back() = ']';
  header += "}";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  file += header;
  const uint64_t growth = peak_growth([&] {
    EXPECT_NE(error_of([&] { parse_safetensors(file, "ck"); }).find("tensor 'a' is not an object"), std::string::npos);
  });
  EXPECT_LT(growth, uint64_t{512} << 20);
}

TEST(DocTables, MarkersNamingPathsOutsideTheRepositoryAreRefused) {
  for (const std::string marker : {"<!-- table results/pinn-cpu ../../../secret.txt -->",
                                   "<!-- table ../../victimgrid table.md -->", "<!-- table /etc passwd -->",
                                   "<!-- table results/./x table.md -->", "<!-- table results/x sub/table.md -->"}) {
    const auto message = error_of([&] { parse_doc_tables("# t\n" + marker + "\nx\n<!-- end table -->\n", "README.md"); });
    EXPECT_NE(message.find("README.md:2: the table marker names"), std::string::npos) << marker << "\n" << message;
    EXPECT_NE(message.find("refused"), std::string::npos) << message;
  }
  const auto tables = parse_doc_tables("<!-- table results/fourier-paper slopes.md -->\nx\n<!-- end table -->\n", "a.md");
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].results, "results/fourier-paper");
  EXPECT_EQ(tables[0].file, "slopes.md");
}

// ------------------------------------------------------------------- demo

TEST(DemoRecords, ARunOfTheDemoPassesTheSchemaCheck) {
  DemoConfig c;
  c.steps = 3;
  c.widths = {4};
  c.test_points = 11;
  const auto dir = test::fresh_dir("demo-records");
  const Config summary = run_demo_recorded(c, 1, dir);
  EXPECT_EQ(problems_of(dir), "");
  EXPECT_EQ(read_json_file(dir / "summary.json").at("ln_best_max_err"), summary.at("ln_best_max_err"));
  const auto config = read_json_file(dir / "config.json");
  EXPECT_EQ(config.at("experiment"), "demo");
  EXPECT_EQ(config.at("kernels").get<std::string>(), pln::cpu_kernels());
  EXPECT_EQ(config.at("config").at("steps"), 3);
  EXPECT_EQ(config.at("set"), Config({"steps=3", "widths=[4]", "test_points=11"}));
  const auto fit = read_csv(dir / "fit.csv");
  EXPECT_EQ(fit.header, (std::vector<std::string>{"x", "target", "LN-Net 4", "PLN(4)-Net 4", "Tanh-Net 4"}));
  EXPECT_EQ(fit.rows.size(), 11u);
  EXPECT_EQ(read_csv(dir / "models.csv").rows.size(), 3u);
  // Its figure: every network against the target, one panel per model.
  const Experiment demo = demo_experiment();
  ASSERT_TRUE(demo.plot_run);
  demo.plot_run(dir, dir / "figures");
  EXPECT_TRUE(fs::exists(dir / "figures" / "fit.png"));
  EXPECT_NE(slurp(dir / "figures" / "fit.gp").find("'PLN(4)-Net'"), std::string::npos);
  // A summary missing a demo metric is named.
  auto written = read_json_file(dir / "summary.json");
  written.erase("tanh_max_err");
  std::ofstream(dir / "summary.json") << written.dump();
  EXPECT_NE(problems_of(dir).find("no metric 'tanh_max_err'"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pln::exp
