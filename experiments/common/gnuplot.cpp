#include "common/gnuplot.h"

#include "common/atomic_file.h"
#include "common/process.h"

#include <fmt/format.h>

#include <stdexcept>

namespace pln::exp {

std::string gnuplot_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += "''";
    else out += c;
  }
  return out + "'";
}

void render_figure(const std::filesystem::path& base, const std::string& body, int width, int height) {
  const auto dir = std::filesystem::absolute(base.has_parent_path() ? base.parent_path() : std::filesystem::path("."));
  const auto name = base.filename().string();
  write_file_atomic(dir / (name + ".gp"), body);
  const struct {
    const char* ext;
    std::string terminal;
  } outputs[] = {
      {"png", fmt::format("set terminal pngcairo size {},{} font ',10'", width, height)},
      {"svg", fmt::format("set terminal svg size {},{} dynamic font 'sans,10'", width, height)},
  };
  for (const auto& o : outputs) {
    const auto target = name + "." + o.ext;
    const std::string setup = fmt::format("cd {}; {}; set output {}", gnuplot_quote(dir.string()),
                                          o.terminal, gnuplot_quote(target + ".tmp"));
    const auto log = dir / (name + ".gnuplot.log");
    const int code = run_process({"gnuplot", "-e", setup, (dir / (name + ".gp")).string()}, log);
    const auto message = tail_of(log, 6);
    std::filesystem::remove(log);
    if (code != 0) {
      std::filesystem::remove(dir / (target + ".tmp"));
      throw std::runtime_error(fmt::format("gnuplot failed on {} (exit {}): {}",
                                           (dir / (name + ".gp")).string(), code, message));
    }
    std::filesystem::rename(dir / (target + ".tmp"), dir / target);
  }
}

}  // namespace pln::exp
