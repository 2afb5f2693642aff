// Figures and tables of `pln fourier` runs and grids: test error against
// width per layer kind (one panel per K), fitted log-log slopes, example fits.

#include "common/atomic_file.h"
#include "common/gnuplot.h"
#include "fourier/fourier.h"

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

struct Point {
  double median = NAN, low = NAN, high = NAN, lr = NAN;
  std::string best_cell;  // lowest error at the chosen learning rate
  double best = std::numeric_limits<double>::infinity();
};

std::string safe(const std::string& label) {
  std::string out;
  for (char c : label) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

}  // namespace

void plot_run(const fs::path& dir) {
  if (!fs::exists(dir / "fit.csv") || !fs::exists(dir / "train.csv")) {
    throw std::runtime_error(dir.string() + " is not a finished fourier run (no fit.csv or train.csv)");
  }
  const auto q = [&](const char* name) { return gnuplot_quote((dir / name).string()); };
  render_figure(dir / "fit",
                "set datafile separator ','\nset grid\nset multiplot layout 1,2\nset xlabel 'x'\n"
                "set title 'fit'\nset key bottom right\n" +
                    fmt::format("plot {} skip 1 using 1:3 with lines dt 2 lc 'black' title 'target', "
                                "'' skip 1 using 1:2 with lines lw 1.5 title 'network'\n",
                                q("fit.csv")) +
                    "set title 'training loss'\nset xlabel 'step'\nset logscale y\nset format y '10^{%L}'\n" +
                    fmt::format("plot {} skip 1 using 1:2 with lines notitle\nunset multiplot\n", q("train.csv")),
                1200, 450);
}

void plot_grid(const fs::path& dir, const CsvTable& t) {
  if (t.rows.empty()) throw std::runtime_error(dir.string() + ": records.csv has no rows to plot");
  // (model, K, width) -> lr -> errors over seeds
  std::map<std::tuple<std::string, int64_t, int64_t>, std::map<double, std::vector<std::pair<double, std::string>>>> runs;
  std::vector<std::string> models;
  std::vector<int64_t> Ks, widths;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const double err = number_value(t.get(r, "rel_l2")), k_value = number_value(t.get(r, "K")),
                 w_value = number_value(t.get(r, "width"));
    if (!std::isfinite(err) || !std::isfinite(k_value) || !std::isfinite(w_value)) continue;
    const auto m = model_of(t, r);
    const auto K = static_cast<int64_t>(k_value);
    const auto w = static_cast<int64_t>(w_value);
    if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
    if (std::find(Ks.begin(), Ks.end(), K) == Ks.end()) Ks.push_back(K);
    if (std::find(widths.begin(), widths.end(), w) == widths.end()) widths.push_back(w);
    runs[{m, K, w}][number_value(t.get(r, "lr"))].emplace_back(err, t.get(r, "cell"));
  }
  if (Ks.empty()) {
    throw std::runtime_error(dir.string() + ": no record has a finite rel_l2 with its K and width; nothing to plot");
  }
  std::sort(Ks.begin(), Ks.end());
  std::sort(widths.begin(), widths.end());
  // The best learning rate per (model, K, width) by median over seeds.
  std::map<std::tuple<std::string, int64_t, int64_t>, Point> points;
  for (const auto& [key, by_lr] : runs) {
    Point best;
    for (const auto& [lr, errs] : by_lr) {
      std::vector<double> values;
      for (const auto& e : errs) values.push_back(e.first);
      const double med = median(values);
      if (std::isnan(best.median) || med < best.median) {
        best = Point{med, *std::min_element(values.begin(), values.end()),
                     *std::max_element(values.begin(), values.end()), lr, "",
                     std::numeric_limits<double>::infinity()};
        for (const auto& e : errs) {
          if (e.first < best.best) best.best = e.first, best.best_cell = e.second;
        }
      }
    }
    points[key] = best;
  }

  // Error against width: one panel per K, median over seeds with the min-max spread.
  const auto data_dir = dir / "plot-data";
  fs::create_directories(data_dir);
  std::string body = "set datafile separator ','\nset grid\nset logscale xy\nset format y '10^{%L}'\n"
                     "set xlabel 'width'\nset ylabel 'relative L2 error (test)'\nset key outside bottom center horizontal\n";
  body += fmt::format("set xrange [{}:{}]\nset multiplot layout 1,{}\n", 0.8 * double(widths.front()),
                      1.25 * double(widths.back()), Ks.size());
  for (const auto K : Ks) {
    body += fmt::format("set title 'K = {}'\nplot ", K);
    bool first = true;
    for (const auto& m : models) {
      std::string csv = "width,median,min,max,lr\n";
      for (const auto w : widths) {
        const auto it = points.find({m, K, w});
        if (it == points.end()) continue;
        csv += fmt::format("{},{},{},{},{}\n", w, it->second.median, it->second.low, it->second.high, it->second.lr);
      }
      const auto file = data_dir / fmt::format("K{}_{}.csv", K, safe(m));
      write_file_atomic(file, csv);
      body += fmt::format("{}{} skip 1 using 1:2:3:4 with yerrorlines title {}", first ? "" : ", ",
                          gnuplot_quote(file.string()), gnuplot_quote(m));
      first = false;
    }
    body += "\n";
  }
  body += "unset multiplot\n";
  render_figure(dir / "error_vs_width", body, std::max<int>(600, 420 * static_cast<int>(Ks.size())), 520);

  // Fitted slopes: error ~ width^-r by least squares on log(median).
  std::string md = "| model |", csv = "model";
  for (const auto K : Ks) {
    md += fmt::format(" K = {} |", K);
    csv += fmt::format(",K_{}", K);
  }
  md += "\n|---|";
  for (size_t i = 0; i < Ks.size(); ++i) md += "---|";
  md += "\n";
  csv += "\n";
  for (const auto& m : models) {
    md += "| " + m + " |";
    csv += m;
    for (const auto K : Ks) {
      double sx = 0, sy = 0, sxx = 0, sxy = 0;
      int n = 0;
      for (const auto w : widths) {
        const auto it = points.find({m, K, w});
        if (it == points.end() || !(it->second.median > 0)) continue;
        const double lx = std::log(double(w)), ly = std::log(it->second.median);
        sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly, ++n;
      }
      const double denom = n * sxx - sx * sx;
      // "+ 0.0" turns a flat fit's -0 into 0.
      const std::string r = n >= 2 && denom > 0 ? fmt::format("{:.2f}", -(n * sxy - sx * sy) / denom + 0.0) : "";
      md += " " + (r.empty() ? "-" : r) + " |";
      csv += "," + r;
    }
    md += "\n";
    csv += "\n";
  }
  write_file_atomic(dir / "slopes.md",
                    "Fitted rate r in rel_l2 ~ width^-r (least squares on log median test error over "
                    "seeds, best learning rate per width).\n\n" + md);
  write_file_atomic(dir / "slopes.csv", csv);

  // Example fits: the best run of each model at the largest width, for the largest K.
  const int64_t K = Ks.back(), w = widths.back();
  std::vector<std::pair<std::string, fs::path>> fits;
  for (const auto& m : models) {
    const auto it = points.find({m, K, w});
    if (it != points.end() && fs::exists(dir / it->second.best_cell / "fit.csv")) {
      fits.emplace_back(m, dir / it->second.best_cell / "fit.csv");
    }
  }
  if (fits.empty()) return;
  const int cols = std::min<int>(3, static_cast<int>(fits.size()));
  const int rows = (static_cast<int>(fits.size()) + cols - 1) / cols;
  std::string fit_body = fmt::format("set datafile separator ','\nset grid\nset key bottom right\nset multiplot layout {},{} title 'K = {}, width {}'\n",
                                     rows, cols, K, w);
  for (const auto& [m, file] : fits) {
    fit_body += fmt::format("set title {}\nplot {} skip 1 using 1:3 with lines dt 2 lc 'black' title 'target', "
                            "'' skip 1 using 1:2 with lines lw 1.5 title 'network'\n",
                            gnuplot_quote(m), gnuplot_quote(file.string()));
  }
  fit_body += "unset multiplot\n";
  render_figure(dir / "fits", fit_body, 400 * cols, 320 * rows);
}

}  // namespace pln::exp::fourier
