// Figures of `pln vit`: accuracy curves of a run; for a grid, accuracy
// against the group size g with LN (g = C) as the reference line.

#include "vit/vit.h"

#include "system/atomic_file.h"
#include "records/gnuplot.h"
#include "records/statistics.h"
#include "system/printable.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace pln::exp::vit {

namespace {

namespace fs = std::filesystem;

struct Spread {
  double median = NAN, low = NAN, high = NAN;
  size_t cells = 0;
};

Spread spread(const std::vector<double>& values) {
  std::vector<double> finite;
  for (double v : values) {
    if (std::isfinite(v)) finite.push_back(v);
  }
  if (finite.empty()) return {NAN, NAN, NAN, values.size()};
  const auto [low, high] = std::minmax_element(finite.begin(), finite.end());
  return {median(finite), *low, *high, values.size()};
}

// The group size of a record as the sweep labels it: g for PLN(g), "C" for LN;
// "" for a record outside the sweep (PLS, no norm, per-site choices).
std::string group_of(const CsvTable& t, size_t row) {
  if (!t.get(row, "norm_sites").empty()) return "";
  const auto norm = t.get(row, "norm");
  if (norm == "ln") return "C";
  if (norm == "pln") return t.get(row, "group");
  return "";
}

}  // namespace

void plot_group_sweep(const fs::path& dir, const CsvTable& t, const fs::path& out) {
  if (t.rows.empty()) throw std::runtime_error(dir.string() + ": records.csv has no rows to plot");
  // Per label set: the metric's values over seeds by group size. Clean labels
  // report the best test accuracy of the run, random labels the final training accuracy.
  struct Sweep {
    std::map<int64_t, std::vector<double>> by_group, top5_by_group;
    std::vector<double> ln, ln_top5;
  };
  std::map<std::string, Sweep> sweeps;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto group = group_of(t, r);
    if (group.empty()) continue;
    const auto labels = t.get(r, "labels").empty() ? std::string("clean") : t.get(r, "labels");
    const double value = number_value(t.get(r, labels == "random" ? "train_acc" : "best_test_top1"));
    const double top5 = number_value(t.get(r, "test_top5"));
    auto& sweep = sweeps[labels];
    if (group == "C") {
      sweep.ln.push_back(value);
      sweep.ln_top5.push_back(top5);
    } else if (const double g = number_value(group); g >= 1) {
      sweep.by_group[static_cast<int64_t>(g)].push_back(value);
      sweep.top5_by_group[static_cast<int64_t>(g)].push_back(top5);
    }
  }
  if (sweeps.empty()) throw std::runtime_error(dir.string() + ": records.csv holds no PLN(g) or LN cells to plot");

  const auto data_dir = out / "plot-data";
  fs::create_directories(data_dir);
  std::string md = "Accuracy against the group size g of PLN(g) at every norm site; g = C is LN. Median over "
                   "seeds, with the range.\n";
  std::set<std::string> file_names;
  for (const auto& [labels, sweep] : sweeps) {
    const bool random = labels == "random";
    const std::string metric = random ? "final training accuracy (fixed random labels)" : "best test top-1 accuracy";
    md += fmt::format("\n### {} labels: {}\n\n| g | cells | median | min | max | final test top-5 (median) |\n"
                      "|---|---|---|---|---|---|\n", labels, metric);
    std::string csv = "g,median,min,max\n";
    for (const auto& [g, values] : sweep.by_group) {
      const auto s = spread(values);
      csv += fmt::format("{},{},{},{}\n", g, number_text(s.median), number_text(s.low), number_text(s.high));
      md += fmt::format("| {} | {} | {:.4f} | {:.4f} | {:.4f} | {:.4f} |\n", g, s.cells, s.median, s.low, s.high,
                        spread(sweep.top5_by_group.at(g)).median);
    }
    const auto ln = spread(sweep.ln);
    if (!sweep.ln.empty()) {
      md += fmt::format("| C (LN) | {} | {:.4f} | {:.4f} | {:.4f} | {:.4f} |\n", ln.cells, ln.median, ln.low, ln.high,
                        spread(sweep.ln_top5).median);
    }
    // The label set comes from the records: its file name is in a fixed
    // alphabet, numbered when two label sets come to the same one.
    std::string name = "group_sweep_" + file_name_part(labels);
    while (!file_names.insert(name).second) name += fmt::format("_{}", file_names.size());
    const auto file = data_dir / (name + ".csv");
    write_file_atomic(file, csv);
    std::vector<double> groups;
    for (const auto& entry : sweep.by_group) groups.push_back(double(entry.first));
    // The key below the plot: inside, it sits on the LN line or on an error bar.
    std::string body = fmt::format("set datafile separator ','\nset grid\nset xlabel 'features per group g'\n"
                                   "set ylabel {}\n",
                                   gnuplot_quote(metric)) +
                       log_axis("x", groups) + key_below({"PLN(g), median and range", "LN (g = C)"}, 800);
    body += fmt::format("plot {} skip 1 using 1:2:3:4 with yerrorlines lw 2 title 'PLN(g), median and range'",
                        gnuplot_quote(file.string()));
    if (std::isfinite(ln.median)) body += fmt::format(", {} with lines dt 2 lw 2 title 'LN (g = C)'", ln.median);
    body += "\n";
    render_figure(out / (random ? "memorisation_vs_group" : "accuracy_vs_group"), body, 800, 560);
  }
  write_file_atomic(out / "group_sweep.md", md);
}

void plot_run(const fs::path& dir, const fs::path& out) {
  if (!fs::exists(dir / "epochs.csv")) throw std::runtime_error(dir.string() + " is not a vit run (no epochs.csv)");
  fs::create_directories(out);
  render_epoch_curves(out / "accuracy", dir / "epochs.csv",
                      {{3, "train (running)"}, {4, "test top-1"}, {5, "test top-5"}});
}

}  // namespace pln::exp::vit
