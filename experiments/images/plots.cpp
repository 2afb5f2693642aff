// The figures and tables of `pln cnn` and `pln vgg`: accuracy curves of a
// run, final accuracies of a grid, and the VGG grid's heat maps of learning
// rate against init scale.

#include "images/images.h"

#include "common/atomic_file.h"
#include "common/csv.h"
#include "common/gnuplot.h"
#include "common/grid.h"

#include <fmt/format.h>

#include <cmath>
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

// Heat maps of the median final training accuracy over seeds: learning rate x init scale, one panel per variant.
void plot_vgg_grid(const fs::path& dir, const CsvTable& t, const fs::path& out) {
  plot_accuracy_table(dir, t, out);
  if (!t.find("lr") || !t.find("init_scale") || !t.find("variant")) return;
  std::map<std::string, std::map<std::pair<double, double>, std::vector<double>>> cells;
  std::vector<std::string> variants;
  std::set<double> lrs, scales;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const double lr = number_value(t.get(r, "lr")), scale = number_value(t.get(r, "init_scale"));
    const double acc = number_value(t.get(r, "train_acc"));
    if (!std::isfinite(lr) || !std::isfinite(scale) || !std::isfinite(acc)) continue;
    const auto v = t.get(r, "variant");
    if (!cells.count(v)) variants.push_back(v);
    cells[v][{lr, scale}].push_back(acc);
    lrs.insert(lr);
    scales.insert(scale);
  }
  if (variants.empty() || lrs.size() < 2 || scales.size() < 2) return;
  // heatmap.md: the same medians as a table, a row per variant.
  std::vector<std::string> columns = {"variant"};
  for (double lr : lrs) {
    for (double scale : scales) columns.push_back(fmt::format("lr {}, init x{}", lr, scale));
  }
  std::string md = "Median final training accuracy over seeds, per variant, learning rate and init scale.\n\n" +
                   markdown_head(columns);
  for (const auto& v : variants) {
    md += "| " + v + " |";
    for (double lr : lrs) {
      for (double scale : scales) {
        const double med = median(cells[v][{lr, scale}]);
        md += std::isfinite(med) ? fmt::format(" {:.3f} |", med) : std::string(" - |");
      }
    }
    md += "\n";
  }
  std::filesystem::create_directories(out);
  write_file_atomic(out / "heatmap.md", md);
  // Cells are drawn on index coordinates, labelled with the values, so every
  // (lr, scale) pair gets its own box whatever the spacing of the values.
  const auto data_dir = out / "plot-data";
  std::filesystem::create_directories(data_dir);
  std::string body = fmt::format(
      "set datafile separator ','\nset cbrange [0:1]\nset cbtics 0.2\nset cblabel 'training accuracy'\n"
      "set xlabel 'learning rate'\nset ylabel 'init scale'\nset xtics {}\nset ytics {}\nset xrange [-0.5:{}]\n"
      "set yrange [-0.5:{}]\nset multiplot layout 1,{} title 'median final training accuracy over seeds'\n",
      tics_at_index({lrs.begin(), lrs.end()}), tics_at_index({scales.begin(), scales.end()}),
      double(lrs.size()) - 0.5, double(scales.size()) - 0.5, variants.size());
  for (const auto& v : variants) {
    std::string csv;
    int i = 0;
    for (double lr : lrs) {
      int j = 0;
      for (double scale : scales) {
        const double med = median(cells[v][{lr, scale}]);
        csv += fmt::format("{},{},{}\n", i, j++, std::isfinite(med) ? fmt::format("{}", med) : "NaN");
      }
      ++i;
    }
    std::string safe;
    for (char ch : v) safe += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    const auto file = data_dir / ("heat_" + safe + ".csv");
    write_file_atomic(file, csv);
    // Values in black on the bright (high) end of the palette, in white on the dark end.
    body += fmt::format("set title {}\nplot {} using 1:2:3 with image notitle, '' using 1:2:(sprintf('%.2f', $3)):"
                        "($3 > 0.6 ? 0 : 0xffffff) with labels tc rgb variable font ',9' notitle\n",
                        gnuplot_quote(v), gnuplot_quote(file.string()));
  }
  body += "unset multiplot\n";
  render_figure(out / "heatmap", body, 400 * static_cast<int>(variants.size()), 420);
}

}  // namespace pln::exp::images
