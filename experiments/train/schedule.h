#pragma once
// Learning-rate schedules shared by every experiment: an optional linear
// warmup, then constant, step decay, or cosine decay to a floor.
//
// Its keys, which the key:: functions below bind to Schedule's members for a
// family's schema (spec/schema.h): lr, schedule (constant | step | cosine),
// warmup (steps), lr_floor (cosine's final lr as a fraction of lr), step_size
// and gamma (step decay: lr * gamma^floor(k / step_size), k counted after
// warmup). A family that lacks a key keeps the member's default.

#include "spec/schema.h"

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
  /// This schedule over a run of `total` steps, validated.
  Schedule over(int64_t total) const;
  /// Learning rate of step k, 0 <= k < total.
  double at(int64_t k) const;
};

namespace key {
Field<Schedule> lr(double value);               ///< > 0
Field<Schedule> schedule(std::string value);    ///< constant | step | cosine
Field<Schedule> warmup(int64_t value);          ///< steps, >= 0
Field<Schedule> lr_floor(double value);         ///< in [0, 1]
Field<Schedule> step_size(int64_t value);       ///< >= 1
Field<Schedule> gamma(double value);            ///< in (0, 1]
}  // namespace key

/// Sets the learning rate of every parameter group.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace pln::exp
