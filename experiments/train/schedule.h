#pragma once
// Learning-rate schedules shared by every experiment: an optional linear
// warmup, then constant, step decay, or cosine decay to a floor.
//
// Config keys read by schedule_from_config: lr, schedule (constant | step |
// cosine), warmup (steps), lr_floor (cosine's final lr as a fraction of lr),
// step_size and gamma (step decay: lr * gamma^floor(k / step_size), k counted
// after warmup). The key:: functions below declare them for a family's key
// table, which validates them.

#include "spec/config.h"
#include "spec/keys.h"

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <string>

namespace pln::exp {

struct Schedule {
  std::string kind = "constant";  ///< constant | step | cosine
  double lr = 1e-3;
  int64_t total = 1;    ///< steps in the run
  int64_t warmup = 0;   ///< linear warmup steps, lr * (k + 1) / warmup
  double floor = 0.0;   ///< cosine ends at lr * floor
  int64_t step_size = 1;
  double gamma = 0.1;

  /// Throws std::invalid_argument naming the field.
  void validate() const;
  /// Learning rate of step k, 0 <= k < total.
  double at(int64_t k) const;
};

namespace key {
Key lr(double value);               ///< > 0
Key schedule(std::string value);    ///< constant | step | cosine
Key warmup(int64_t value);          ///< steps, >= 0
Key lr_floor(double value);         ///< in [0, 1]
Key step_size(int64_t value);       ///< >= 1
Key gamma(double value);            ///< in (0, 1]
}  // namespace key

/// The schedule named by a configuration's keys, over `total` steps.
Schedule schedule_from_config(const Config& config, int64_t total);

/// Sets the learning rate of every parameter group.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace pln::exp
