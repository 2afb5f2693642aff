#pragma once
// Figures through gnuplot: a script body is rendered twice, to PNG and SVG.

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pln::exp {

/// Writes `<base>.gp` (the body, with data paths relative to its directory)
/// and renders `<base>.png` and `<base>.svg`; throws std::runtime_error with
/// gnuplot's message when it fails or is not installed.
void render_figure(const std::filesystem::path& base, const std::string& body,
                   int width = 900, int height = 600);

/// A string as a gnuplot single-quoted literal.
std::string gnuplot_quote(const std::string& text);

/// A run's files, quoted for a gnuplot script, by name; throws
/// std::runtime_error naming the directory when one is missing (the run is
/// not finished).
std::map<std::string, std::string> quoted_run_files(const std::filesystem::path& dir,
                                                    const std::vector<std::string>& files,
                                                    const std::string& experiment);

/// A tic list for `set xtics` with a labelled tick at each value, e.g.
/// `('16' 16, '32' 32)`.
std::string tics_at(const std::vector<double>& values);

/// The same labels at positions 0, 1, 2...: for values drawn on index
/// coordinates (the cells of a heat map).
std::string tics_at_index(const std::vector<double>& values);

/// A log axis (`axis` is "x" or "y") for a few discrete positive values
/// (widths, group sizes): ticks at those values and a range padded by a
/// quarter either side. gnuplot's own ticks fall on powers of the base, so
/// an axis spanning less than one would show no labelled tick at all. With
/// no positive value, a plain range [1:10].
std::string log_axis(const std::string& axis, std::vector<double> values);

/// A key at the bottom of the page, where it covers no data, and a bottom
/// margin that fits it under the x axis title (gnuplot's own `set key below`
/// draws over that title). In a multiplot every panel gets the margin and one
/// key serves them all: give this before the first panel, with the titles that
/// panel draws, and `unset key` after it.
std::string key_below(const std::vector<std::string>& titles, int panel_width);

/// Accuracy in [0, 1] against epoch from an `epochs.csv` (epoch in its first
/// column): one curve per (column, title), the key below the plot, where it
/// covers no curve, and integer ticks when there are few epochs.
void render_epoch_curves(const std::filesystem::path& base, const std::filesystem::path& epochs_csv,
                         const std::vector<std::pair<int, std::string>>& curves);

}  // namespace pln::exp
