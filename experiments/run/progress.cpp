#include "run/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace pln::exp {

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)),
      total_(std::max<int64_t>(total, 1)),
      terminal_(::isatty(STDOUT_FILENO) == 1),
      start_(Clock::now()),
      last_draw_(start_) {}

void Progress::update(int64_t done, const std::string& status) {
  const auto now = Clock::now();
  if (terminal_) {
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  } else {
    const bool tenth = done * 10 >= next_tenth_ * total_;
    if (!tenth && now - last_draw_ < std::chrono::seconds(30)) return;
    while (next_tenth_ * total_ <= done * 10) ++next_tenth_;
  }
  last_draw_ = now;
  draw(done, status, false);
}

void Progress::finish(const std::string& status) {
  if (terminal_ || last_drawn_ != total_) draw(total_, status, true);
}

void Progress::draw(int64_t done, const std::string& status, bool final) {
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  const double fraction = std::min(1.0, double(done) / double(total_));
  last_drawn_ = done;
  if (terminal_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(fraction * kWidth);
    const double eta = done > 0 ? seconds * double(total_ - done) / double(done) : 0.0;
    fmt::print("\r{} [{:<{}}] {:>3.0f}% {}/{} {:.0f}s (eta {:.0f}s) {}\033[K", label_,
               std::string(filled, '#'), kWidth, 100 * fraction, done, total_, seconds, eta, status);
    if (final) fmt::print("\n");
  } else {
    fmt::print("{} {}/{} ({:.0f}%) {:.1f}s {}\n", label_, done, total_, 100 * fraction, seconds,
               status);
  }
  std::fflush(stdout);
}

}  // namespace pln::exp
