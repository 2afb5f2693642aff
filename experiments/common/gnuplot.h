#pragma once
// Figures through gnuplot: a script body is rendered twice, to PNG and SVG.

#include <filesystem>
#include <string>

namespace pln::exp {

/// Writes `<base>.gp` (the body, with data paths relative to its directory)
/// and renders `<base>.png` and `<base>.svg`; throws std::runtime_error with
/// gnuplot's message when it fails or is not installed.
void render_figure(const std::filesystem::path& base, const std::string& body,
                   int width = 900, int height = 600);

/// A string as a gnuplot single-quoted literal.
std::string gnuplot_quote(const std::string& text);

}  // namespace pln::exp
