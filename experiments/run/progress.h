#pragma once
// Progress of a long loop: a redrawn bar when stdout is a terminal, otherwise
// plain lines at every tenth of the work (and at least every 30 seconds), so
// logs of batch jobs stay readable.

#include <chrono>
#include <cstdint>
#include <string>

namespace pln::exp {

class Progress {
 public:
  Progress(std::string label, int64_t total);
  /// `done` items of `total` are finished; `status` is shown beside the count.
  void update(int64_t done, const std::string& status = "");
  /// Ends the bar's line (terminal) or prints the final line.
  void finish(const std::string& status = "");

 private:
  using Clock = std::chrono::steady_clock;
  void draw(int64_t done, const std::string& status, bool final);

  std::string label_;
  int64_t total_;
  bool terminal_;
  int64_t next_tenth_ = 1;
  int64_t last_drawn_ = -1;
  Clock::time_point start_, last_draw_;
};

}  // namespace pln::exp
