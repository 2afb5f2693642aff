// Figures and tables of `pln fourier` runs and grids: test error against
// width per layer kind (one panel per K), fitted log-log slopes with their
// spread, example fits.

#include "fourier/fourier.h"
#include "system/atomic_file.h"
#include "records/gnuplot.h"
#include "records/statistics.h"
#include "system/printable.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

namespace pln::exp::fourier {

namespace {

namespace fs = std::filesystem;

/// The layer kind of a record: the grid's "model" label, else layer and group.
std::string model_of(const CsvTable& t, size_t row) {
  if (auto label = t.get(row, "model"); !label.empty()) return label;
  const auto layer = t.get(row, "layer"), group = t.get(row, "group");
  if (layer == "pln") return "PLN(" + group + ")";
  if (layer == "pls") return "PLS(" + group + ")";
  if (layer == "ln") return "LN";
  return layer.empty() ? "?" : layer;
}

struct Run {
  double err;
  double seed;
  std::string cell;
};

/// One (model, K, width): the learning rate with the lowest median error over seeds.
struct Point {
  double median = NAN, low = NAN, high = NAN, lr = NAN;
  std::string best_cell;  // lowest error at that learning rate
};

using Key = std::tuple<std::string, int64_t, int64_t>;  // model, K, width

struct Summary {
  std::vector<std::string> models;
  std::vector<int64_t> Ks, widths;
  std::map<Key, std::map<double, std::vector<Run>>> runs;  // ... -> lr -> runs over seeds
  std::map<Key, Point> points;
};

Summary summarise(const CsvTable& t, const fs::path& dir) {
  if (t.rows.empty()) throw std::runtime_error(dir.string() + ": records.csv has no rows to plot");
  Summary s;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const double err = number_value(t.get(r, "rel_l2")), k_value = number_value(t.get(r, "K")),
                 w_value = number_value(t.get(r, "width"));
    if (!std::isfinite(err) || !std::isfinite(k_value) || !std::isfinite(w_value)) continue;
    const auto m = model_of(t, r);
    const auto K = static_cast<int64_t>(k_value);
    const auto w = static_cast<int64_t>(w_value);
    if (std::find(s.models.begin(), s.models.end(), m) == s.models.end()) s.models.push_back(m);
    if (std::find(s.Ks.begin(), s.Ks.end(), K) == s.Ks.end()) s.Ks.push_back(K);
    if (std::find(s.widths.begin(), s.widths.end(), w) == s.widths.end()) s.widths.push_back(w);
    s.runs[{m, K, w}][number_value(t.get(r, "lr"))].push_back({err, number_value(t.get(r, "seed")), t.get(r, "cell")});
  }
  if (s.Ks.empty()) {
    throw std::runtime_error(dir.string() + ": no record has a finite rel_l2 with its K and width; nothing to plot");
  }
  std::sort(s.Ks.begin(), s.Ks.end());
  std::sort(s.widths.begin(), s.widths.end());
  for (const auto& [key, by_lr] : s.runs) {
    Point best;
    for (const auto& [lr, runs] : by_lr) {
      std::vector<double> values;
      for (const auto& run : runs) values.push_back(run.err);
      const double med = median(values);
      if (!std::isnan(best.median) && !(med < best.median)) continue;
      const auto lowest = std::min_element(runs.begin(), runs.end(),
                                           [](const Run& a, const Run& b) { return a.err < b.err; });
      best = {med, lowest->err, *std::max_element(values.begin(), values.end()), lr, lowest->cell};
    }
    s.points[key] = best;
  }
  return s;
}

/// Least-squares rate r of err ~ width^-r over (width, err) pairs with err > 0; NaN with fewer than two.
double fitted_rate(const std::vector<std::pair<int64_t, double>>& pairs) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int n = 0;
  for (const auto& [w, err] : pairs) {
    if (!(err > 0)) continue;
    const double lx = std::log(double(w)), ly = std::log(err);
    sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly, ++n;
  }
  const double denom = n * sxx - sx * sx;
  return n >= 2 && denom > 0 ? -(n * sxy - sx * sy) / denom + 0.0 : NAN;  // + 0.0: no "-0.00"
}

std::string rate_text(double r, const char* missing = "-") {
  // Rounded first, so that a flat fit is "0.00", never "-0.00".
  return std::isfinite(r) ? fmt::format("{:.2f}", std::round(r * 100) / 100 + 0.0) : missing;
}

/// The cells whose fits the example figure draws: the best run of each model
/// at the largest width, for the largest K.
std::vector<std::pair<std::string, std::string>> fit_cells(const Summary& s) {
  std::vector<std::pair<std::string, std::string>> cells;
  for (const auto& m : s.models) {
    const auto it = s.points.find({m, s.Ks.back(), s.widths.back()});
    if (it != s.points.end() && !it->second.best_cell.empty()) cells.emplace_back(m, it->second.best_cell);
  }
  return cells;
}

void draw_error_vs_width(const Summary& s, const fs::path& out) {
  const auto data_dir = out / "plot-data";
  fs::create_directories(data_dir);
  const int panel_width = std::max<int>(600, 420 * static_cast<int>(s.Ks.size())) / static_cast<int>(s.Ks.size());
  std::string body = "set datafile separator ','\nset grid\nset logscale y\nset format y '10^{%L}'\n"
                     "set xlabel 'width'\nset ylabel 'relative L2 error (test)'\n" +
                     log_axis("x", std::vector<double>(s.widths.begin(), s.widths.end())) +
                     key_below(s.models, panel_width) +
                     fmt::format("set multiplot layout 1,{}\n", s.Ks.size());
  for (const auto K : s.Ks) {
    body += fmt::format("set title 'K = {}'\nplot ", K);
    bool first = true;
    for (const auto& m : s.models) {
      std::string csv = "width,median,min,max,lr\n";
      for (const auto w : s.widths) {
        const auto it = s.points.find({m, K, w});
        if (it == s.points.end()) continue;
        csv += fmt::format("{},{},{},{},{}\n", w, it->second.median, it->second.low, it->second.high, it->second.lr);
      }
      const auto file = data_dir / fmt::format("K{}_{}.csv", K, file_name_part(m));
      write_file_atomic(file, csv);
      body += fmt::format("{}{} skip 1 using 1:2:3:4 with yerrorlines title {}", first ? "" : ", ",
                          gnuplot_quote(file.string()), gnuplot_quote(m));
      first = false;
    }
    body += "\nunset key\n";  // the first panel's key serves them all
  }
  body += "unset multiplot\n";
  render_figure(out / "error_vs_width", body, panel_width * static_cast<int>(s.Ks.size()), 520);
}

// error_table.md: the median test error of every model, K and width.
void write_error_table(const Summary& s, const fs::path& out) {
  std::string md = "Median relative L2 test error over seeds, at the learning rate with the lowest median, per "
                   "model, K and width.\n";
  for (const auto K : s.Ks) {
    md += fmt::format("\n| K = {} |", K);
    for (const auto w : s.widths) md += fmt::format(" w = {} |", w);
    md += "\n|---|";
    for (size_t i = 0; i < s.widths.size(); ++i) md += "---|";
    md += "\n";
    for (const auto& m : s.models) {
      md += "| " + m + " |";
      for (const auto w : s.widths) {
        const auto it = s.points.find({m, K, w});
        md += it == s.points.end() ? " - |" : fmt::format(" {:.3g} |", it->second.median);
      }
      md += "\n";
    }
  }
  write_file_atomic(out / "error_table.md", md);
}

// slopes.md / slopes.csv: the rate of the medians, and its spread over every
// (seed, learning rate) pair fitted on its own.
void write_slopes(const Summary& s, const fs::path& out) {
  std::vector<std::string> columns = {"model"};
  std::string csv = "model";
  for (const auto K : s.Ks) {
    columns.push_back(fmt::format("K = {}", K));
    csv += fmt::format(",K_{},K_{}_min,K_{}_max", K, K, K);
  }
  std::string md = markdown_head(columns);
  csv += "\n";
  for (const auto& m : s.models) {
    md += "| " + m + " |";
    csv += m;
    for (const auto K : s.Ks) {
      std::vector<std::pair<int64_t, double>> medians;
      std::map<std::pair<double, double>, std::vector<std::pair<int64_t, double>>> per_run;  // (lr, seed)
      for (const auto w : s.widths) {
        if (const auto it = s.points.find({m, K, w}); it != s.points.end()) medians.emplace_back(w, it->second.median);
        if (const auto it = s.runs.find({m, K, w}); it != s.runs.end()) {
          for (const auto& [lr, runs] : it->second) {
            for (const auto& run : runs) per_run[{lr, run.seed}].emplace_back(w, run.err);
          }
        }
      }
      std::vector<double> rates;
      for (const auto& [key, pairs] : per_run) {
        if (const double r = fitted_rate(pairs); std::isfinite(r)) rates.push_back(r);
      }
      const double r = fitted_rate(medians);
      double low = NAN, high = NAN;
      if (!rates.empty()) {
        low = *std::min_element(rates.begin(), rates.end());
        high = *std::max_element(rates.begin(), rates.end());
      }
      md += rates.size() > 1 ? fmt::format(" {} ({} to {}) |", rate_text(r), rate_text(low), rate_text(high))
                             : fmt::format(" {} |", rate_text(r));
      csv += fmt::format(",{},{},{}", rate_text(r, ""), rate_text(low, ""), rate_text(high, ""));
    }
    md += "\n";
    csv += "\n";
  }
  write_file_atomic(out / "slopes.md",
                    "Fitted rate r in rel_l2 ~ width^-r: least squares on the log median test error over seeds at "
                    "the best learning rate per width; in brackets the range of r fitted to each (seed, learning "
                    "rate) pair on its own.\n\n" + md);
  write_file_atomic(out / "slopes.csv", csv);
}

void draw_fits(const Summary& s, const fs::path& dir, const fs::path& out) {
  std::vector<std::pair<std::string, fs::path>> fits;
  for (const auto& [m, cell] : fit_cells(s)) {
    if (fs::exists(dir / cell / "fit.csv")) fits.emplace_back(m, dir / cell / "fit.csv");
  }
  if (fits.empty()) return;
  const int cols = std::min<int>(3, static_cast<int>(fits.size()));
  const int rows = (static_cast<int>(fits.size()) + cols - 1) / cols;
  std::string body = "set datafile separator ','\nset grid\nset xlabel 'x'\nset ylabel 'f(x)'\n" +
                     key_below({"target", "network"}, 400) +
                     fmt::format("set multiplot layout {},{} title 'K = {}, width {}'\n", rows, cols, s.Ks.back(),
                                 s.widths.back());
  for (const auto& [m, file] : fits) {
    body += fmt::format("set title {}\nplot {} skip 1 using 1:3 with lines dt 2 lc 'black' title 'target', "
                        "'' skip 1 using 1:2 with lines lw 1.5 title 'network'\nunset key\n",
                        gnuplot_quote(m), gnuplot_quote(file.string()));
  }
  body += "unset multiplot\n";
  render_figure(out / "fits", body, 400 * cols, 320 * rows);
}

}  // namespace

void plot_run(const fs::path& dir, const fs::path& out) {
  const auto files = quoted_run_files(dir, {"fit.csv", "train.csv"}, "fourier");
  fs::create_directories(out);
  render_figure(out / "fit",
                "set datafile separator ','\nset grid\nset multiplot layout 1,2\nset xlabel 'x'\nset ylabel 'f(x)'\n"
                "set title 'fit'\n" + key_below({"target", "network"}, 600) +
                    fmt::format("plot {} skip 1 using 1:3 with lines dt 2 lc 'black' title 'target', "
                                "'' skip 1 using 1:2 with lines lw 1.5 title 'network'\nunset key\n",
                                files.at("fit.csv")) +
                    "set title 'training loss'\nset xlabel 'step'\nset ylabel 'MSE'\nset logscale y\n"
                    "set format y '10^{%L}'\n" +
                    fmt::format("plot {} skip 1 using 1:2 with lines notitle\nunset multiplot\n", files.at("train.csv")),
                1200, 450);
}

std::vector<std::string> figure_inputs(const CsvTable& records) {
  std::vector<std::string> files;
  for (const auto& [m, cell] : fit_cells(summarise(records, "records"))) files.push_back(cell + "/fit.csv");
  return files;
}

void plot_grid(const fs::path& dir, const CsvTable& t, const fs::path& out) {
  const Summary s = summarise(t, dir);
  fs::create_directories(out);
  draw_error_vs_width(s, out);
  write_error_table(s, out);
  write_slopes(s, out);
  draw_fits(s, dir, out);
}

}  // namespace pln::exp::fourier
