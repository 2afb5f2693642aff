#include "records/gnuplot.h"

#include "system/atomic_file.h"
#include "records/csv.h"
#include "system/process.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <stdexcept>

namespace pln::exp {

std::map<std::string, std::string> quoted_run_files(const std::filesystem::path& dir,
                                                    const std::vector<std::string>& files,
                                                    const std::string& experiment) {
  std::map<std::string, std::string> quoted;
  for (const auto& file : files) {
    if (!std::filesystem::exists(dir / file)) {
      throw std::runtime_error(fmt::format("{} is not a finished {} run (no {})", dir.string(), experiment, file));
    }
    quoted[file] = gnuplot_quote((dir / file).string());
  }
  return quoted;
}

std::string gnuplot_quote(const std::string& text) {
  // Inside single quotes gnuplot interprets nothing (no backslash escapes, no
  // `backquote` substitution, no @macros), save '' for a quote. Only a line
  // break ends the literal early, and gnuplot then runs the rest of the line
  // as a command; labels come from records anyone may have written, so every
  // control character is written as visible \xNN text instead.
  std::string out = "'";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\'') out += "''";
    else if (byte < 0x20 || byte == 0x7f) out += fmt::format("\\x{:02x}", byte);
    else out += c;
  }
  return out + "'";
}

namespace {

std::string tic_list(const std::vector<double>& values, bool by_index) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    out += fmt::format("{}{} {}", i ? ", " : "", gnuplot_quote(fmt::format("{}", values[i])),
                       by_index ? double(i) : values[i]);
  }
  return "(" + out + ")";
}

}  // namespace

std::string tics_at(const std::vector<double>& values) { return tic_list(values, false); }

std::string tics_at_index(const std::vector<double>& values) { return tic_list(values, true); }

std::string log_axis(const std::string& axis, std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !(v > 0); }), values.end());
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  // No value: a valid range still, for what else the plot draws (a reference line).
  if (values.empty()) return fmt::format("set logscale {0}\nset {0}range [1:10]\n", axis);
  return fmt::format("set logscale {0}\nset {0}tics {1}\nset {0}range [{2}:{3}]\n", axis, tics_at(values),
                     0.8 * values.front(), 1.25 * values.back());
}

std::string key_below(const std::vector<std::string>& titles, int panel_width) {
  // gnuplot wraps a horizontal key to the width of the panel that draws it
  // (about 7 pixels a character at font size 10, a sample 4 characters long),
  // so the margin is sized for the rows it will take.
  size_t longest = 1;
  for (const auto& t : titles) longest = std::max(longest, t.size());
  const int entry = 7 * static_cast<int>(longest + 8);
  const int columns = std::max(1, (panel_width - 80) / entry);
  const int rows = std::max<int>(1, (static_cast<int>(titles.size()) + columns - 1) / columns);
  return fmt::format("set bmargin {}\nset key at screen 0.5, screen 0.01 center bottom horizontal\n", 4 + rows);
}

void render_epoch_curves(const std::filesystem::path& base, const std::filesystem::path& epochs_csv,
                         const std::vector<std::pair<int, std::string>>& curves) {
  std::vector<std::string> titles;
  for (const auto& curve : curves) titles.push_back(curve.second);
  std::string body = "set datafile separator ','\nset grid\nset xlabel 'epoch'\nset ylabel 'accuracy'\n"
                     "set yrange [0:1]\n" + key_below(titles, 900);
  // gnuplot's own ticks over a few epochs fall between them (1.2, 1.4...).
  if (read_csv(epochs_csv).rows.size() <= 12) body += "set xtics 1\n";
  body += "plot ";
  for (size_t i = 0; i < curves.size(); ++i) {
    body += fmt::format("{}{} skip 1 using 1:{} with linespoints title {}", i ? ", " : "",
                        i ? "''" : gnuplot_quote(epochs_csv.string()), curves[i].first, gnuplot_quote(curves[i].second));
  }
  render_figure(base, body + "\n");
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
    const auto target = dir / (name + "." + o.ext);
    // gnuplot writes into a fresh file of pln's own (never through a file or
    // link planted under a predictable name), renamed over the figure once
    // complete. It runs in this process's working directory, where the data
    // paths in `body` (built from the caller's paths, relative or not) resolve.
    const auto temporary = create_temporary_beside(target);
    ::close(temporary.fd);
    const std::string setup = fmt::format("{}; set output {}", o.terminal, gnuplot_quote(temporary.path.string()));
    const auto log = dir / (name + ".gnuplot.log");
    const int code = run_process({"gnuplot", "-e", setup, (dir / (name + ".gp")).string()}, log);
    const auto message = tail_of(log, 6);
    std::filesystem::remove(log);
    if (code != 0) {
      std::filesystem::remove(temporary.path);
      throw std::runtime_error(fmt::format("gnuplot failed on {} (exit {}): {}",
                                           (dir / (name + ".gp")).string(), code, message));
    }
    std::filesystem::rename(temporary.path, target);
  }
}

}  // namespace pln::exp
