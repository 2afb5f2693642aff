#include "train/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace pln::exp {

void Schedule::validate() const {
  if (kind != "constant" && kind != "step" && kind != "cosine") {
    throw std::invalid_argument("schedule must be one of constant|step|cosine, got '" + kind + "'");
  }
  if (!(lr > 0) || !std::isfinite(lr)) {
    throw std::invalid_argument(fmt::format("lr must be a positive finite number, got {}", lr));
  }
  if (total < 1) throw std::invalid_argument(fmt::format("the run must have >= 1 step, got {}", total));
  if (warmup < 0) throw std::invalid_argument(fmt::format("warmup must be >= 0, got {}", warmup));
  if (!(floor >= 0 && floor <= 1)) {
    throw std::invalid_argument(fmt::format("lr_floor must be in [0, 1], got {}", floor));
  }
  if (kind == "step" && step_size < 1) {
    throw std::invalid_argument(fmt::format("step_size must be >= 1, got {}", step_size));
  }
  if (kind == "step" && !(gamma > 0 && gamma <= 1)) {
    throw std::invalid_argument(fmt::format("gamma must be in (0, 1], got {}", gamma));
  }
}

double Schedule::at(int64_t k) const {
  if (k < warmup) return lr * double(k + 1) / double(warmup);
  const int64_t after = k - warmup;
  if (kind == "step") return lr * std::pow(gamma, double(after / step_size));
  if (kind == "cosine") {
    const int64_t span = std::max<int64_t>(1, total - warmup - 1);
    const double t = std::min(1.0, double(after) / double(span));
    return lr * (floor + (1 - floor) * 0.5 * (1 + std::cos(M_PI * t)));
  }
  return lr;
}

namespace key {

Field<Schedule> lr(double value) { return field(&Schedule::lr, number("lr", value, above(0), "peak learning rate")); }
Field<Schedule> schedule(std::string value) {
  return field(&Schedule::kind, choice("schedule", std::move(value), {"constant", "step", "cosine"},
                                       "learning-rate decay after the warmup"));
}
Field<Schedule> warmup(int64_t value) {
  return field(&Schedule::warmup, integer("warmup", value, at_least(0), "steps of linear warmup"));
}
Field<Schedule> lr_floor(double value) {
  return field(&Schedule::floor, number("lr_floor", value, closed(0, 1), "cosine's final lr, a fraction of lr"));
}
Field<Schedule> step_size(int64_t value) {
  return field(&Schedule::step_size, integer("step_size", value, at_least(1), "step decay: steps per decay"));
}
Field<Schedule> gamma(double value) {
  return field(&Schedule::gamma, number("gamma", value, left_open(0, 1), "step decay: factor per decay"));
}

}  // namespace key

Schedule Schedule::over(int64_t steps) const {
  Schedule s = *this;
  s.total = steps;
  s.validate();
  return s;
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace pln::exp
