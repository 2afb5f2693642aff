// Figures and the table of `pln pinn` runs and grids.

#include "common/atomic_file.h"
#include "common/gnuplot.h"
#include "pinn/pinn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

namespace pln::exp::pinn {

namespace {

namespace fs = std::filesystem;

std::string header() { return "set datafile separator ','\nset grid\n"; }

/// The model label of a record: the grid's "model" axis, else norm/act/group.
std::string model_of(const CsvTable& t, size_t row) {
  if (auto label = t.get(row, "model"); !label.empty()) return label;
  const auto norm = t.get(row, "norm"), act = t.get(row, "act");
  std::string name = norm == "pln" || norm == "pls" ? fmt::format("{}({})", norm == "pln" ? "PLN" : "PLS",
                                                                  t.get(row, "group"))
                     : norm == "ln"                ? "LN"
                                                   : "";
  if (act != "none" && !act.empty()) name += (name.empty() ? "" : "+") + act;
  return name.empty() ? "linear" : name;
}

std::string curve_plot(const std::vector<std::pair<std::string, fs::path>>& runs) {
  std::string body = header() + "set multiplot layout 1,2\nset xlabel 'x'\nset title 'solution'\nset key bottom right\n";
  std::string plots, errors;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto file = gnuplot_quote((runs[i].second / "solution.csv").string());
    plots += fmt::format("{}{} skip 1 using 1:2 with lines lw 1.5 title {}", i ? ", " : "", file,
                         gnuplot_quote(runs[i].first));
    errors += fmt::format("{}{} skip 1 using 1:(abs($2-$3)) with lines lw 1.5 title {}", i ? ", " : "",
                          file, gnuplot_quote(runs[i].first));
  }
  const auto first = gnuplot_quote((runs.front().second / "solution.csv").string());
  body += fmt::format("plot {}, {} skip 1 using 1:3 with lines dt 2 lc 'black' title 'exact'\n", plots, first);
  body += "set title '|u - u*|'\nset logscale y\nset format y '10^{%L}'\n";
  body += "plot " + errors + "\nunset multiplot\n";
  return body;
}

}  // namespace

void plot_run(const fs::path& dir) {
  if (!fs::exists(dir / "train.csv") || !fs::exists(dir / "solution.csv")) {
    throw std::runtime_error(dir.string() + " is not a finished pinn run (no train.csv or solution.csv)");
  }
  const auto q = [&](const char* name) { return gnuplot_quote((dir / name).string()); };
  render_figure(dir / "training",
                header() + "set logscale y\nset format y '10^{%L}'\nset xlabel 'step'\n"
                           "set multiplot layout 1,2\nset title 'loss'\n" +
                    fmt::format("plot {} skip 1 using 1:2 with lines title 'loss', '' skip 1 using 1:3 "
                                "with lines title 'PDE', '' skip 1 using 1:4 with lines title 'boundary'\n",
                                q("train.csv")) +
                    "set title 'relative L2 error'\n" +
                    fmt::format("plot {} skip 1 using 1:2 with linespoints notitle\nunset multiplot\n",
                                q("eval.csv")));
  render_figure(dir / "solution", curve_plot({{"network", dir}}));
}

void plot_grid(const fs::path& dir, const CsvTable& t) {
  if (t.rows.empty()) throw std::runtime_error(dir.string() + ": records.csv has no rows to plot");
  // Best (lowest) relative L2 error per (model, width), over learning rates and seeds.
  std::vector<std::string> models;
  std::vector<int64_t> widths;
  std::map<std::pair<std::string, int64_t>, std::pair<double, std::string>> best;
  std::map<std::string, std::pair<double, std::string>> best_model;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const double w_value = number_value(t.get(r, "width"));
    if (!std::isfinite(w_value)) continue;
    const auto m = model_of(t, r);
    const auto w = static_cast<int64_t>(w_value);
    const double err = number_value(t.get(r, "rel_l2"));
    if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
    if (std::find(widths.begin(), widths.end(), w) == widths.end()) widths.push_back(w);
    if (std::isnan(err)) continue;
    auto& b = best.try_emplace({m, w}, std::numeric_limits<double>::infinity(), "").first->second;
    if (err < b.first) b = {err, t.get(r, "cell")};
    auto& bm = best_model.try_emplace(m, std::numeric_limits<double>::infinity(), "").first->second;
    if (err < bm.first) bm = {err, t.get(r, "cell")};
  }
  std::sort(widths.begin(), widths.end());
  std::string md, csv = "model";
  for (auto w : widths) csv += fmt::format(",width_{}", w);
  md = "| model |";
  for (auto w : widths) md += fmt::format(" width {} |", w);
  md += "\n|---|";
  for (size_t i = 0; i < widths.size(); ++i) md += "---|";
  md += "\n";
  csv += "\n";
  for (const auto& m : models) {
    md += "| " + m + " |";
    csv += m;
    for (auto w : widths) {
      const auto it = best.find({m, w});
      const std::string v = it == best.end() ? "" : fmt::format("{:.3e}", it->second.first);
      md += " " + (v.empty() ? "-" : v) + " |";
      csv += "," + v;
    }
    md += "\n";
    csv += "\n";
  }
  write_file_atomic(dir / "table.md",
                    "Best relative L2 error ||u - u*|| / ||u*|| per model and width "
                    "(over learning rates and seeds).\n\n" + md);
  write_file_atomic(dir / "table.csv", csv);

  std::vector<std::pair<std::string, fs::path>> runs;
  for (const auto& m : models) {
    if (auto it = best_model.find(m); it != best_model.end() && fs::exists(dir / it->second.second / "solution.csv")) {
      runs.emplace_back(m, dir / it->second.second);
    }
  }
  if (runs.empty()) return;
  render_figure(dir / "solutions", curve_plot(runs), 1200, 500);
  std::string body = header() + "set logscale y\nset format y '10^{%L}'\nset xlabel 'step'\n"
                                "set ylabel 'relative L2 error'\nset key outside right\n"
                                "set title 'test error of the best run per model'\nplot ";
  for (size_t i = 0; i < runs.size(); ++i) {
    body += fmt::format("{}{} skip 1 using 1:2 with linespoints title {}", i ? ", " : "",
                        gnuplot_quote((runs[i].second / "eval.csv").string()), gnuplot_quote(runs[i].first));
  }
  render_figure(dir / "convergence", body + "\n");
}

}  // namespace pln::exp::pinn
