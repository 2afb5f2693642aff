// The PINN family's grids: Table 1's search axes, and the CPU search's long
// stage checked against the shipped records of its coarse stage.

#include <gtest/gtest.h>

#include <records/csv.h>
#include <spec/experiment.h>
#include <sweep/cells.h>
#include <run/run.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string>

namespace pln::exp {
namespace {

namespace fs = std::filesystem;

std::set<std::string> labels_of(const GridSpec& spec, const std::string& axis) {
  std::set<std::string> labels;
  for (const auto& cell : expand_grid(spec)) labels.insert(cell.labels.at(axis));
  return labels;
}

TEST(PinnGrids, TableSpansTheSearchAxesOfTable1) {
  const auto& pinn = find_experiment("pinn");
  const auto& table = find_grid(pinn, "table");
  EXPECT_EQ(table.preset, "paper");
  EXPECT_EQ(resolve_config(pinn, "paper", {})["n_interior"].get<int64_t>(), 5000);
  EXPECT_EQ(labels_of(table, "model"), (std::set<std::string>{"PLN(4)", "SAT", "Tanh", "ReLU"}));
  EXPECT_EQ(labels_of(table, "width"), (std::set<std::string>{"128", "256"}));
  EXPECT_EQ(labels_of(table, "depth"), (std::set<std::string>{"2", "3", "4"}));
  EXPECT_EQ(labels_of(table, "bc_weight"), (std::set<std::string>{"10", "1", "0.1"}));
  EXPECT_EQ(labels_of(table, "optimizer"), (std::set<std::string>{"adam", "sgd"}));
  EXPECT_EQ(labels_of(table, "seed").size(), 5u);
  EXPECT_EQ(expand_grid(table).size(), 4u * 2 * 3 * 3 * 2 * 3 * 5);
  // Table 1's networks have no normalisation layer besides PLN(4).
  for (const auto& cell : expand_grid(table)) {
    const auto& sets = cell.sets;
    const bool pln = std::find(sets.begin(), sets.end(), "norm=pln") != sets.end();
    EXPECT_TRUE(pln || std::find(sets.begin(), sets.end(), "norm=none") != sets.end()) << cell.id;
  }
}

TEST(PinnGrids, CpuSearchGivesEveryModelTheSameBudget) {
  const auto& pinn = find_experiment("pinn");
  for (const char* name : {"table-cpu", "table-cpu-long"}) {
    std::map<std::string, int> cells_per_model;
    for (const auto& cell : expand_grid(find_grid(pinn, name))) ++cells_per_model[cell.labels.at("model")];
    ASSERT_EQ(cells_per_model.size(), 4u) << name;
    for (const auto& [model, n] : cells_per_model) EXPECT_EQ(n, cells_per_model.begin()->second) << name << " " << model;
  }
}

// The long stage trains what the coarse stage found best: each model's
// depth, loss weight, optimiser and learning rate in `table-cpu-long` are
// those of its lowest-error cell in results/pinn-table-cpu/records.csv.
TEST(PinnGrids, LongStageTrainsTheCoarseStagesBestConfigurations) {
  const fs::path records_file = fs::path(PLN_SOURCE_DIR) / "results" / "pinn-table-cpu" / "records.csv";
  if (!fs::exists(records_file)) GTEST_SKIP() << records_file << " is not shipped in this checkout";
  const auto records = read_csv(records_file);
  std::map<std::string, std::pair<double, size_t>> best;  // model -> (rel_l2, row)
  for (size_t r = 0; r < records.rows.size(); ++r) {
    const double err = number_value(records.get(r, "rel_l2"));
    auto& b = best.try_emplace(records.get(r, "model"), std::numeric_limits<double>::infinity(), 0).first->second;
    if (std::isfinite(err) && err < b.first) b = {err, r};
  }
  const auto& long_stage = find_grid(find_experiment("pinn"), "table-cpu-long");
  ASSERT_EQ(long_stage.axes.front().name, "model");
  for (const auto& value : long_stage.axes.front().values) {
    SCOPED_TRACE(value.label);
    ASSERT_TRUE(best.count(value.label));
    const size_t row = best.at(value.label).second;
    EXPECT_EQ(value.overrides["depth"].get<int64_t>(), std::stoll(records.get(row, "depth")));
    EXPECT_EQ(value.overrides["bc_weight"].get<double>(), number_value(records.get(row, "bc_weight")));
    EXPECT_EQ(value.overrides["optimizer"].get<std::string>(), records.get(row, "optimizer"));
    EXPECT_EQ(value.overrides["lr"].get<double>(), number_value(records.get(row, "lr")));
  }
}

}  // namespace
}  // namespace pln::exp
