// Figures and the table of `pln pinn` runs and grids.

#include "system/atomic_file.h"
#include "records/gnuplot.h"
#include "pinn/pinn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
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

std::string curve_plot(const std::vector<std::pair<std::string, fs::path>>& runs, int panel_width) {
  std::vector<std::string> titles;
  for (const auto& run : runs) titles.push_back(run.first);
  titles.push_back("exact");
  // Both panels draw the same runs in the same colours: one key under them.
  std::string body = header() + key_below(titles, panel_width) +
                     "set multiplot layout 1,2\nset xlabel 'x'\nset title 'solution'\nset ylabel 'u(x)'\n";
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
  body += "unset key\nset title 'error'\nset ylabel '|u - u*|'\nset logscale y\nset format y '10^{%L}'\n";
  body += "plot " + errors + "\nunset multiplot\n";
  return body;
}

/// The paper's Table 1 (1-D Helmholtz PINN, best relative L2 error over seeds,
/// depths, loss weights and optimisers) at widths 128 and 256, as printed; it
/// publishes no LN-Net value.
const std::map<std::string, std::pair<std::string, std::string>>& published_table1() {
  static const std::map<std::string, std::pair<std::string, std::string>> values = {
      {"PLN(4)", {"3.5e-5", "3.6e-5"}}, {"SAT", {"1.04e-4", "5.2e-5"}}, {"Tanh", {"2.50e-4", "1.88e-4"}},
      {"ReLU", {"0.994", "0.998"}}};
  return values;
}

struct Best {
  std::vector<std::string> models;
  std::vector<int64_t> widths;
  std::map<std::pair<std::string, int64_t>, std::pair<double, std::string>> by_width;  // (model, width) -> (err, cell)
  std::map<std::string, std::pair<double, std::string>> by_model;
};

// Best (lowest) relative L2 error per (model, width) and per model, over every other setting.
Best best_runs(const CsvTable& t, const fs::path& dir) {
  if (t.rows.empty()) throw std::runtime_error(dir.string() + ": records.csv has no rows to plot");
  Best b;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const double w_value = number_value(t.get(r, "width"));
    if (!std::isfinite(w_value)) continue;
    const auto m = model_of(t, r);
    const auto w = static_cast<int64_t>(w_value);
    const double err = number_value(t.get(r, "rel_l2"));
    if (std::find(b.models.begin(), b.models.end(), m) == b.models.end()) b.models.push_back(m);
    if (std::find(b.widths.begin(), b.widths.end(), w) == b.widths.end()) b.widths.push_back(w);
    if (std::isnan(err)) continue;
    auto& bw = b.by_width.try_emplace({m, w}, std::numeric_limits<double>::infinity(), "").first->second;
    if (err < bw.first) bw = {err, t.get(r, "cell")};
    auto& bm = b.by_model.try_emplace(m, std::numeric_limits<double>::infinity(), "").first->second;
    if (err < bm.first) bm = {err, t.get(r, "cell")};
  }
  std::sort(b.widths.begin(), b.widths.end());
  return b;
}

std::string error_text(const Best& b, const std::string& m, int64_t w) {
  const auto it = b.by_width.find({m, w});
  return it == b.by_width.end() ? "" : fmt::format("{:.3e}", it->second.first);
}

// The settings of a record that a PINN search varies, in words (without its
// seed: the settings a grid's seeds share).
std::string settings_of(const CsvTable& t, size_t row) {
  std::string text;
  const auto add = [&](const std::string& key, const std::string& name) {
    if (const auto v = t.get(row, key); !v.empty()) {
      text += (text.empty() ? "" : ", ") + (name.empty() ? v : name + " " + v);
    }
  };
  add("depth", "depth");
  if (const auto pde = t.get(row, "pde_weight"); !pde.empty() && pde != "1") add("pde_weight", "pde weight");
  add("bc_weight", "bc weight");
  add("optimizer", "");
  add("lr", "lr");
  add("schedule", "");
  add("dtype", "");
  add("steps", "steps");
  add("n_interior", "points");
  return text;
}

std::string configuration_of(const CsvTable& t, size_t row) {
  const auto seed = t.get(row, "seed");
  return settings_of(t, row) + (seed.empty() ? "" : ", seed " + seed);
}

// A grid at the authors' framework's protocol (`points=deepxde`), whose records
// hold DeepXDE's error on the training points.
bool original_protocol(const CsvTable& t) {
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (t.get(r, "points") != "deepxde") return false;
  }
  return !t.rows.empty() && !t.get(0, "rel_l2_train").empty();
}

// The lowest error of each (model, width) in a grid of this project's protocol,
// with the configuration that gave it.
std::map<std::pair<std::string, int64_t>, std::pair<double, std::string>> best_of_records(const CsvTable& t) {
  std::map<std::pair<std::string, int64_t>, std::pair<double, std::string>> best;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const double err = number_value(t.get(r, "rel_l2")), width = number_value(t.get(r, "width"));
    if (!std::isfinite(err) || !std::isfinite(width)) continue;
    auto& b = best.try_emplace({model_of(t, r), static_cast<int64_t>(width)}, std::numeric_limits<double>::infinity(), "")
                  .first->second;
    if (err < b.first) b = {err, configuration_of(t, r)};
  }
  return best;
}

struct SeedStats {
  double best = std::numeric_limits<double>::infinity(), mean = NAN, sd = NAN;
  size_t runs = 0;
};

SeedStats seed_stats(const std::vector<double>& errors) {
  SeedStats s;
  double sum = 0;
  for (double e : errors) s.best = std::min(s.best, e), sum += e;
  s.runs = errors.size();
  if (s.runs == 0) return s;
  s.mean = sum / double(s.runs);
  double squares = 0;
  for (double e : errors) squares += (e - s.mean) * (e - s.mean);
  s.sd = s.runs > 1 ? std::sqrt(squares / double(s.runs - 1)) : 0.0;
  return s;
}

std::string stats_text(const SeedStats& s) {
  if (s.runs == 0) return "- | -";
  return fmt::format("{:.2e} | {:.2e} +- {:.1e} ({})", s.best, s.mean, s.sd, s.runs);
}

// The runs of a grid at the authors' protocol: DeepXDE's final and lowest
// logged errors, and its own best (the error at the logged step of lowest
// training loss, which records made before it lack: absent, not counted), by
// (model, width), then by settings (the seeds pooled).
struct SettingRuns {
  std::vector<double> final_errors, best_errors, deepxde_best_errors;
};
struct RunsBySetting {
  std::vector<std::string> models;  // in the records' order
  std::map<std::pair<std::string, int64_t>, std::map<std::string, SettingRuns>> groups;
  bool deepxde_best = false;  // whether the records have the column
};

RunsBySetting runs_by_setting(const CsvTable& t) {
  RunsBySetting runs;
  runs.deepxde_best = t.find("rel_l2_train_at_lowest_loss").has_value();
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const double width = number_value(t.get(r, "width"));
    const double final_error = number_value(t.get(r, "rel_l2_train")), best_error = number_value(t.get(r, "rel_l2_train_best"));
    if (!std::isfinite(width) || !std::isfinite(final_error)) continue;
    const auto m = model_of(t, r);
    if (std::find(runs.models.begin(), runs.models.end(), m) == runs.models.end()) runs.models.push_back(m);
    auto& g = runs.groups[{m, static_cast<int64_t>(width)}][settings_of(t, r)];
    g.final_errors.push_back(final_error);
    g.best_errors.push_back(best_error);
    const double at_lowest_loss = number_value(t.get(r, "rel_l2_train_at_lowest_loss"));  // NaN where absent
    if (std::isfinite(at_lowest_loss)) g.deepxde_best_errors.push_back(at_lowest_loss);
  }
  return runs;
}

// The caption's words and the columns of DeepXDE's best, where the records have it.
std::string deepxde_best_caption(const RunsBySetting& runs) {
  return runs.deepxde_best ? ", and at the logged step of lowest training loss (DeepXDE's best, its `best_metrics`)"
                           : "";
}
std::vector<std::string> deepxde_best_columns(const RunsBySetting& runs) {
  if (!runs.deepxde_best) return {};
  return {"DeepXDE's best: best", "DeepXDE's best: mean +- sd"};
}
std::string deepxde_best_cells(const RunsBySetting& runs, const SettingRuns* g) {
  if (!runs.deepxde_best) return "";
  return " " + (g ? stats_text(seed_stats(g->deepxde_best_errors)) : std::string("- | -")) + " |";
}

// comparison.md of a grid at the authors' protocol: per model and width the
// paper's value, then DeepXDE's error on the training points, at the last step
// and the lowest logged, best and mean +- sd over the seeds of the settings
// holding the best final run; beside them the best of this project's protocol
// from `ours` (records.csv of `table-cpu-long`), when given.
void write_original_comparison(const RunsBySetting& runs, const CsvTable* ours, const fs::path& out) {
  const auto& models = runs.models;
  const auto& groups = runs.groups;
  const auto ours_best = ours ? best_of_records(*ours) : decltype(best_of_records(*ours)){};
  std::string md =
      "Relative L2 error at the authors' framework's protocol, as DeepXDE's `l2 relative error` measures it (on the "
      "training points), at the last step (final) and the lowest logged (best logged)" + deepxde_best_caption(runs) +
      ", of the settings that gave the best final run: their best run, and the mean +- sd (runs) over their seeds "
      "(another setting may hold a lower best-logged error); beside the paper's Table 1";
  md += ours ? " and the best at this project's protocol (error on the 1,001-point grid after the last step, "
               "`table-cpu-long`).\n\n"
             : ".\n\n";
  std::vector<std::string> head = {"model", "width", "paper", "final: best", "final: mean +- sd", "best logged: best",
                                   "best logged: mean +- sd"};
  for (const auto& column : deepxde_best_columns(runs)) head.push_back(column);
  head.push_back("settings");
  if (ours) head.insert(head.end(), {"this project's protocol", "its settings"});
  md += markdown_head(head);
  std::set<int64_t> widths = {128, 256};  // Table 1's, and any other the grid ran
  for (const auto& [key, settings] : groups) widths.insert(key.second);
  for (const auto& m : models) {
    const auto paper = published_table1().find(m);
    for (int64_t w : widths) {
      const std::string published = paper == published_table1().end() || (w != 128 && w != 256) ? "not published"
                                    : w == 128 ? paper->second.first
                                               : paper->second.second;
      std::string settings = "-";
      SeedStats final_stats, logged_stats;
      const SettingRuns* chosen = nullptr;
      if (const auto it = groups.find({m, w}); it != groups.end()) {
        for (const auto& [name, g] : it->second) {
          const auto s = seed_stats(g.final_errors);
          if (s.best < final_stats.best) {
            final_stats = s, logged_stats = seed_stats(g.best_errors), settings = name, chosen = &g;
          }
        }
      }
      md += fmt::format("| {} | {} | {} | {} | {} |{} {} |", m, w, published, stats_text(final_stats),
                        stats_text(logged_stats), deepxde_best_cells(runs, chosen), settings);
      if (ours) {
        const auto it = ours_best.find({m, w});
        md += it == ours_best.end() ? " - | - |" : fmt::format(" {:.2e} | {} |", it->second.first, it->second.second);
      }
      md += "\n";
    }
  }
  write_file_atomic(out / "comparison.md", md);
}

// settings.md: every setting's runs, so that a grid varying one setting
// (`table-original-cpu-ablation`: the schedule, the precision) shows each.
void write_settings_table(const RunsBySetting& runs, const fs::path& out) {
  std::string all = "DeepXDE's relative L2 error on the training points of every setting of the grid: at the last "
                    "step (final) and the lowest logged (best logged)" + deepxde_best_caption(runs) +
                    ", the best run and the mean +- sd (runs) over its seeds.\n\n";
  std::vector<std::string> head = {"model", "width", "settings", "final: best", "final: mean +- sd",
                                   "best logged: best", "best logged: mean +- sd"};
  for (const auto& column : deepxde_best_columns(runs)) head.push_back(column);
  all += markdown_head(head);
  for (const auto& m : runs.models) {
    for (const auto& [key, settings] : runs.groups) {
      if (key.first != m) continue;
      for (const auto& [name, g] : settings) {
        all += fmt::format("| {} | {} | {} | {} | {} |{}\n", m, key.second, name,
                           stats_text(seed_stats(g.final_errors)), stats_text(seed_stats(g.best_errors)),
                           deepxde_best_cells(runs, &g));
      }
    }
  }
  write_file_atomic(out / "settings.md", all);
}

// comparison.md: our best errors beside the paper's Table 1, at the widths it
// publishes, with the configuration that gave each.
void write_comparison(const Best& b, const CsvTable& t, const fs::path& out) {
  std::map<std::string, size_t> row_of_cell;
  for (size_t r = 0; r < t.rows.size(); ++r) row_of_cell[t.get(r, "cell")] = r;
  std::string md = "Best relative L2 error here, at this project's protocol (on the evenly spaced test grid after "
                   "the last step), over every configuration of the grid, and the configuration that gave it; "
                   "beside it the paper's Table 1 (best over seeds, depths, loss weights and optimisers), run "
                   "at another protocol.\n\n" +
                   markdown_head({"model", "width", "here", "paper", "configuration"});
  for (const auto& m : b.models) {
    const auto paper = published_table1().find(m);
    for (int64_t w : {int64_t{128}, int64_t{256}}) {
      const auto it = b.by_width.find({m, w});
      const bool ran = it != b.by_width.end() && !it->second.second.empty();
      const std::string published = paper == published_table1().end() ? "not published"
                                    : w == 128                         ? paper->second.first
                                                                       : paper->second.second;
      md += fmt::format("| {} | {} | {} | {} | {} |\n", m, w, ran ? fmt::format("{:.3e}", it->second.first) : "-",
                        published, ran ? configuration_of(t, row_of_cell.at(it->second.second)) : "-");
    }
  }
  write_file_atomic(out / "comparison.md", md);
}

// search.md, for grids that vary the search axes: the best error of each
// model and width at each (depth, loss weight, optimiser, learning rate).
void write_search_table(const CsvTable& t, const fs::path& out) {
  const std::vector<std::string> axes = {"depth", "pde_weight", "bc_weight", "optimizer", "lr"};
  const bool original = original_protocol(t);
  const std::string metric = original ? "rel_l2_train" : "rel_l2";
  const bool weighted = t.find("pde_weight").has_value();  // records made before the key have no such column
  bool varies = false;
  for (const auto& axis : axes) {
    std::set<std::string> values;
    for (size_t r = 0; r < t.rows.size(); ++r) values.insert(t.get(r, axis));
    varies = varies || values.size() > 1;
  }
  if (!varies) return;
  std::vector<std::string> configs, columns;
  std::map<std::pair<std::string, std::string>, std::pair<double, bool>> best;  // (config, column) -> (err, diverged)
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto config = weighted ? fmt::format("{} | {} | {} | {} | {}", t.get(r, "depth"), t.get(r, "pde_weight"),
                                               t.get(r, "bc_weight"), t.get(r, "optimizer"), t.get(r, "lr"))
                                 : fmt::format("{} | {} | {} | {}", t.get(r, "depth"), t.get(r, "bc_weight"),
                                               t.get(r, "optimizer"), t.get(r, "lr"));
    const auto column = fmt::format("{}, width {}", model_of(t, r), t.get(r, "width"));
    if (std::find(configs.begin(), configs.end(), config) == configs.end()) configs.push_back(config);
    if (std::find(columns.begin(), columns.end(), column) == columns.end()) columns.push_back(column);
    const double err = number_value(t.get(r, metric));
    const double diverged_at = number_value(t.get(r, "diverged_at"));
    const bool diverged = std::isfinite(diverged_at) && diverged_at >= 0;
    auto& b = best.try_emplace({config, column}, std::numeric_limits<double>::infinity(), true).first->second;
    if (!diverged && err < b.first) b = {err, false};
  }
  std::string md = std::string("Best relative L2 error ") +
                   (original ? "(DeepXDE's, on the training points, at the last step) " : "") +
                   "of each model and width (over seeds) at each setting of the search's other axes; \"diverged\" "
                   "where every run of the setting diverged.\n\n";
  std::vector<std::string> head = {"depth", "bc weight", "optimizer", "lr"};
  if (weighted) head.insert(head.begin() + 1, "pde weight");
  head.insert(head.end(), columns.begin(), columns.end());
  md += markdown_head(head);
  for (const auto& config : configs) {
    md += "| " + config + " |";
    for (const auto& column : columns) {
      const auto it = best.find({config, column});
      md += it == best.end()         ? std::string(" - |")
            : it->second.second      ? std::string(" diverged |")
                                     : fmt::format(" {:.2e} |", it->second.first);
    }
    md += "\n";
  }
  write_file_atomic(out / "search.md", md);
}

std::vector<std::pair<std::string, std::string>> curve_cells(const Best& b) {
  std::vector<std::pair<std::string, std::string>> cells;
  for (const auto& m : b.models) {
    if (auto it = b.by_model.find(m); it != b.by_model.end() && !it->second.second.empty()) {
      cells.emplace_back(m, it->second.second);
    }
  }
  return cells;
}

}  // namespace

void plot_run(const fs::path& dir, const fs::path& out) {
  const auto files = quoted_run_files(dir, {"train.csv", "eval.csv", "solution.csv"}, "pinn");
  fs::create_directories(out);
  render_figure(out / "training",
                header() + "set logscale y\nset format y '10^{%L}'\nset xlabel 'step'\n" +
                    key_below({"loss", "PDE", "boundary"}, 450) +
                    "set multiplot layout 1,2\nset title 'loss'\nset ylabel 'loss'\n" +
                    // The total is mostly the PDE term: drawn wider, under it, so both show.
                    fmt::format("plot {} skip 1 using 1:2 with lines lw 3 title 'loss', '' skip 1 using 1:3 "
                                "with lines dt 2 lw 1.5 title 'PDE', '' skip 1 using 1:4 with lines lw 1.5 "
                                "title 'boundary'\nunset key\n",
                                files.at("train.csv")) +
                    "set title 'relative L2 error'\nset ylabel '||u - u*|| / ||u*||'\n" +
                    fmt::format("plot {} skip 1 using 1:2 with linespoints notitle\nunset multiplot\n",
                                files.at("eval.csv")));
  render_figure(out / "solution", curve_plot({{"network", dir}}, 450));
}

std::vector<std::string> figure_inputs(const CsvTable& records) {
  std::vector<std::string> files;
  for (const auto& [m, cell] : curve_cells(best_runs(records, "records"))) {
    files.push_back(cell + "/solution.csv");
    files.push_back(cell + "/eval.csv");
  }
  return files;
}

void plot_grid(const fs::path& dir, const CsvTable& t, const fs::path& out) {
  const Best b = best_runs(t, dir);
  fs::create_directories(out);
  std::vector<std::string> columns = {"model"};
  std::string csv = "model";
  for (auto w : b.widths) csv += fmt::format(",width_{}", w), columns.push_back(fmt::format("width {}", w));
  std::string md = markdown_head(columns);
  csv += "\n";
  for (const auto& m : b.models) {
    md += "| " + m + " |";
    csv += m;
    for (auto w : b.widths) {
      const std::string v = error_text(b, m, w);
      md += " " + (v.empty() ? "-" : v) + " |";
      csv += "," + v;
    }
    md += "\n";
    csv += "\n";
  }
  write_file_atomic(out / "table.md",
                    "Best relative L2 error ||u - u*|| / ||u*|| per model and width "
                    "(over every configuration of the grid).\n\n" + md);
  write_file_atomic(out / "table.csv", csv);
  if (original_protocol(t)) {
    const auto runs = runs_by_setting(t);
    // This project's protocol's search, when its long stage's records lie beside this grid (as in results/).
    const auto ours_file = dir.parent_path() / "pinn-table-cpu-long" / "records.csv";
    const auto ours = fs::exists(ours_file) ? std::optional<CsvTable>(read_csv(ours_file)) : std::nullopt;
    write_original_comparison(runs, ours ? &*ours : nullptr, out);
    write_settings_table(runs, out);
  } else {
    write_comparison(b, t, out);
  }
  write_search_table(t, out);

  std::vector<std::pair<std::string, fs::path>> runs;
  for (const auto& [m, cell] : curve_cells(b)) {
    if (fs::exists(dir / cell / "solution.csv")) runs.emplace_back(m, dir / cell);
  }
  if (runs.empty()) return;
  render_figure(out / "solutions", curve_plot(runs, 600), 1200, 500);
  std::string body = header() + "set logscale y\nset format y '10^{%L}'\nset xlabel 'step'\n"
                                "set ylabel 'relative L2 error'\nset key outside right\n"
                                "set title 'test error of the best run per model'\nplot ";
  for (size_t i = 0; i < runs.size(); ++i) {
    body += fmt::format("{}{} skip 1 using 1:2 with linespoints title {}", i ? ", " : "",
                        gnuplot_quote((runs[i].second / "eval.csv").string()), gnuplot_quote(runs[i].first));
  }
  render_figure(out / "convergence", body + "\n");
}

}  // namespace pln::exp::pinn
