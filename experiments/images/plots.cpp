// The figures and tables of `pln cnn` and `pln vgg`: accuracy curves of a
// run, final accuracies of a grid, and the VGG grid's heat maps of learning
// rate against init scale.

#include "images/images.h"

#include "system/atomic_file.h"
#include "records/csv.h"
#include "records/gnuplot.h"
#include "records/statistics.h"
#include "system/printable.h"
#include "sweep/cells.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

namespace pln::exp::images {

namespace fs = std::filesystem;

void plot_run(const fs::path& dir, const fs::path& out) {
  if (!fs::exists(dir / "epochs.csv")) throw std::runtime_error(dir.string() + " is not a finished image run (no epochs.csv)");
  fs::create_directories(out);
  render_epoch_curves(out / "accuracy", dir / "epochs.csv", {{3, "train (running)"}, {4, "test"}});
}

void plot_accuracy_table(const fs::path& dir, const CsvTable& t, const fs::path& out) {
  if (t.rows.empty()) throw std::runtime_error(dir.string() + ": records.csv has no rows to plot");
  // Median final accuracies over seeds per (model, labels) and every other axis value but the seed.
  std::map<std::string, std::vector<std::pair<double, double>>> groups;
  std::vector<std::string> order;
  auto axes = grid_axes(dir);
  if (axes.empty()) axes = {"norm", "group", "act"};
  for (size_t r = 0; r < t.rows.size(); ++r) {
    std::string key;
    for (const auto& column : axes) {
      if (column != "seed" && column != "labels") key += (key.empty() ? "" : ", ") + column + "=" + t.get(r, column);
    }
    key += ", labels=" + t.get(r, "labels");
    if (!groups.count(key)) order.push_back(key);
    groups[key].emplace_back(number_value(t.get(r, "train_acc")), number_value(t.get(r, "test_acc")));
  }
  std::string md = "| cells | seeds | train acc (median) | test acc (median) |\n|---|---|---|---|\n";
  for (const auto& key : order) {
    std::vector<double> train, test;
    for (const auto& [a, b] : groups[key]) train.push_back(a), test.push_back(b);
    md += fmt::format("| {} | {} | {:.4f} | {:.4f} |\n", key, train.size(), median(train), median(test));
  }
  fs::create_directories(out);
  write_file_atomic(out / "accuracy.md", "Final accuracies, median over seeds.\n\n" + md);
}

namespace {

// Mean of the finite values (NaN when none).
double mean_of(const std::vector<double>& values) {
  double sum = 0;
  int n = 0;
  for (double v : values) {
    if (std::isfinite(v)) sum += v, ++n;
  }
  return n ? sum / n : NAN;
}

std::string scale_label(double scale) {
  // The init scales are powers of sqrt 2: 1/4, 1/(2 sqrt 2), ..., 4.
  const double k = std::round(2 * std::log2(scale));
  if (std::abs(std::pow(2.0, k / 2) - scale) > 1e-9 * scale) return fmt::format("{:g}", scale);
  if (k == 0) return "1";
  const bool whole = static_cast<int64_t>(std::abs(k)) % 2 == 0;
  const std::string magnitude = whole ? fmt::format("{:g}", std::pow(2.0, std::abs(k) / 2))
                                      : (std::abs(k) == 1 ? "sqrt2" : fmt::format("{:g}sqrt2", std::pow(2.0, (std::abs(k) - 1) / 2)));
  return k > 0 ? magnitude : "1/" + magnitude;
}

}  // namespace

// The paper's Figure 4: one heat map per variant (activation panel), learning
// rate across, init scale up, each cell the mean final test accuracy over the
// seeds (the test split serves as the validation set), one colour scale.
void plot_vgg_grid(const fs::path& dir, const CsvTable& t, const fs::path& out) {
  plot_accuracy_table(dir, t, out);
  for (const char* column : {"lr", "init_scale", "variant", "test_acc"}) {
    if (!t.find(column)) {
      throw std::runtime_error(fmt::format("{}: records.csv has no '{}' column, which the heat maps need "
                                           "(a grid over variant, lr and init_scale)", dir.string(), column));
    }
  }
  // Records made before runs recorded their best epoch have no best_test_acc.
  const bool has_best = t.find("best_test_acc").has_value();
  std::map<std::string, std::map<std::pair<double, double>, std::vector<double>>> cells, best_cells;
  std::vector<std::string> variants;
  std::set<double> lrs, scales;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const double lr = number_value(t.get(r, "lr")), scale = number_value(t.get(r, "init_scale"));
    if (!std::isfinite(lr) || !std::isfinite(scale)) continue;
    const auto v = t.get(r, "variant");
    if (!cells.count(v)) variants.push_back(v);
    cells[v][{lr, scale}].push_back(number_value(t.get(r, "test_acc")));
    if (has_best) best_cells[v][{lr, scale}].push_back(number_value(t.get(r, "best_test_acc")));
    lrs.insert(lr);
    scales.insert(scale);
  }
  if (variants.empty() || lrs.size() < 2 || scales.size() < 2) return;
  fs::create_directories(out);
  using Means = std::map<std::string, std::map<std::pair<double, double>, double>>;
  const auto seed_means = [](const auto& by_variant) {
    Means means;
    for (const auto& [v, by_cell] : by_variant) {
      for (const auto& [key, accs] : by_cell) means[v][key] = mean_of(accs);
    }
    return means;
  };
  const Means final_means = seed_means(cells), best_means = seed_means(best_cells);
  // The seed mean of a cell; NaN for a cell the records do not hold.
  const auto mean_in = [](const Means& means, const std::string& v, double lr, double scale) {
    const auto by_cell = means.find(v);
    if (by_cell == means.end()) return double(NAN);
    const auto it = by_cell->second.find({lr, scale});
    return it == by_cell->second.end() ? double(NAN) : it->second;
  };
  const auto mean_at = [&](const std::string& v, double lr, double scale) { return mean_in(final_means, v, lr, scale); };

  // heatmap.md: per variant, init scale down the rows (largest on top, as drawn), learning rate across.
  size_t runs = 0, min_seeds = SIZE_MAX, max_seeds = 0;
  std::string tables;
  for (const auto& v : variants) {
    std::vector<std::string> columns = {"init scale \\ lr"};
    for (double lr : lrs) columns.push_back(fmt::format("{:g}", lr));
    tables += "**" + v + "**\n\n" + markdown_head(columns);
    for (auto it = scales.rbegin(); it != scales.rend(); ++it) {
      tables += "| " + scale_label(*it) + " |";
      for (double lr : lrs) {
        const auto& accs = cells[v][{lr, *it}];
        runs += accs.size();
        min_seeds = std::min(min_seeds, accs.size());
        max_seeds = std::max(max_seeds, accs.size());
        const double m = mean_at(v, lr, *it);
        tables += std::isfinite(m) ? fmt::format(" {:.3f} |", m) : std::string(" - |");
      }
      tables += "\n";
    }
    tables += "\n";
  }
  const std::string seeds = min_seeds == max_seeds ? fmt::format("{} seed{}", min_seeds, min_seeds == 1 ? "" : "s")
                                                   : fmt::format("{} to {} seeds", min_seeds, max_seeds);
  write_file_atomic(out / "heatmap.md",
                    fmt::format("Mean final test accuracy over seeds ({} runs; {} a cell), per variant: "
                                "init scale (times He) down, learning rate across.\n\n",
                                runs, seeds) + tables);

  // sensitivity.md: how much each variant's accuracy moves with the init
  // scale, at the learning rates where it trains at some init scale; for the
  // final accuracy and, where the records hold it, the best epoch's.
  std::string md = fmt::format(
      "Sensitivity to the initialisation, from the seed means of each cell's test accuracy: at the last epoch "
      "(final, as heatmap.md shows it) and{} at the best epoch. A cell trained if its accuracy is at least 0.5. At "
      "each learning rate where some init scale trained, the range (max - min) of accuracy over the {} init "
      "scales; its mean and largest value over those learning rates.\n\n",
      has_best ? "" : ", where the records hold it (these do not: they predate it),", scales.size());
  md += markdown_head({"variant", "accuracy", "best cell", fmt::format("cells trained (of {})", lrs.size() * scales.size()),
                       fmt::format("learning rates that train (of {})", lrs.size()), "mean range there",
                       "largest range there"});
  std::vector<std::pair<std::string, const Means*>> kinds = {{"final", &final_means}};
  if (has_best) kinds.emplace_back("best epoch", &best_means);
  for (const auto& v : variants) {
    for (const auto& [kind, means] : kinds) {
      double best = -1, range_sum = 0, range_max = 0;
      int training_lrs = 0, trained = 0;
      for (double lr : lrs) {
        double lo = INFINITY, hi = -INFINITY;
        for (double scale : scales) {
          const double m = mean_in(*means, v, lr, scale);
          if (!std::isfinite(m)) continue;
          lo = std::min(lo, m), hi = std::max(hi, m), best = std::max(best, m);
          trained += m >= 0.5;
        }
        if (hi >= 0.5) range_sum += hi - lo, range_max = std::max(range_max, hi - lo), ++training_lrs;
      }
      md += training_lrs ? fmt::format("| {} | {} | {:.3f} | {} | {} | {:.3f} | {:.3f} |\n", v, kind, best, trained,
                                       training_lrs, range_sum / training_lrs, range_max)
                         : fmt::format("| {} | {} | {:.3f} | 0 | 0 | - | - |\n", v, kind, best);
    }
  }
  write_file_atomic(out / "sensitivity.md", md);

  // Cells are drawn on index coordinates, labelled with the values, so every
  // (lr, scale) pair gets its own box whatever the spacing of the values.
  const auto data_dir = out / "plot-data";
  fs::create_directories(data_dir);
  std::string ytics;
  int j = 0;
  for (double scale : scales) ytics += fmt::format("{}'{}' {}", j ? ", " : "(", scale_label(scale), j), ++j;
  ytics += ")";
  // Fixed margins in pixels (the axis labels on the left, the colour bar on
  // the right) so that every panel gets the same area: a colour bar drawn
  // inside the last panel's cell would shrink that panel alone. The y label
  // and its tics take the 95 px on the left; the bar (15 px wide, 90 px from
  // the right edge) and its label the 115 px on the right; 57 px between
  // panels keeps neighbours' rotated learning-rate tics apart.
  constexpr int kPanelPx = 380, kHeightPx = 460, kLeftPx = 95, kRightPx = 115, kGapPx = 57;
  constexpr int kBarFromRightPx = 90, kBarPx = 15;
  const int width = kPanelPx * static_cast<int>(variants.size()), height = kHeightPx;
  const double left = double(kLeftPx) / width, right = 1.0 - double(kRightPx) / width;
  std::string body = fmt::format(
      "set datafile separator ','\nset palette rgbformulae 22,13,-31\nset cbrange [0:1]\nset cbtics 0.2\n"
      "set xlabel 'learning rate'\nset ylabel 'init scale (x He)'\nset xtics {} rotate by -45\nset ytics {}\n"
      "set xrange [-0.5:{}]\nset yrange [-0.5:{}]\nset size ratio -1\nunset colorbox\n"
      "set multiplot layout 1,{} margins {:.4f},{:.4f},0.14,0.86 spacing {:.4f} "
      "title 'mean final test accuracy, {} a cell'\n",
      tics_at_index({lrs.begin(), lrs.end()}), ytics, double(lrs.size()) - 0.5, double(scales.size()) - 0.5,
      variants.size(), left, right, double(kGapPx) / width, seeds);
  for (size_t k = 0; k < variants.size(); ++k) {
    const auto& v = variants[k];
    std::string csv;
    int i = 0;
    for (double lr : lrs) {
      int jj = 0;
      for (double scale : scales) {
        const double m = mean_at(v, lr, scale);
        csv += fmt::format("{},{},{}\n", i, jj++, std::isfinite(m) ? fmt::format("{}", m) : "NaN");
      }
      ++i;
    }
    const auto file = data_dir / ("heat_" + file_name_part(v) + ".csv");
    write_file_atomic(file, csv);
    // One colour bar, right of the last panel: every panel shares the scale [0, 1].
    if (k + 1 == variants.size()) {
      body += fmt::format("set colorbox user origin screen {:.4f},0.2 size screen {:.4f},0.6\n"
                          "set cblabel 'test accuracy'\n",
                          1.0 - double(kBarFromRightPx) / width, double(kBarPx) / width);
    }
    if (k > 0) body += "unset ylabel\n";
    // Values in black on the bright (high) end of the palette, in white on the dark end.
    body += fmt::format("set title {}\nplot {} using 1:2:3 with image notitle, '' using 1:2:(sprintf('%.2f', $3)):"
                        "($3 > 0.6 ? 0 : 0xffffff) with labels tc rgb variable font ',8' notitle\n",
                        gnuplot_quote(v), gnuplot_quote(file.string()));
  }
  body += "unset multiplot\n";
  render_figure(out / "heatmap", body, width, height);
}

}  // namespace pln::exp::images
