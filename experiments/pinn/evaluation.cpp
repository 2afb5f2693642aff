#include "pinn/evaluation.h"

#include "records/json.h"

#include <limits>
#include <optional>
#include <stdexcept>

namespace pln::exp::pinn {

namespace {

double relative_l2(const torch::Tensor& u, const torch::Tensor& exact) {
  return ((u - exact).norm() / exact.norm()).item<double>();
}

}  // namespace

Evaluation evaluate(PinnNet& net, const Problem& problem, const torch::Tensor& grid, const torch::Tensor& training) {
  torch::NoGradGuard no_grad;
  const auto u = net->forward(grid).squeeze(1);
  const auto exact = problem.exact(grid);
  return {relative_l2(u, exact), (u - exact).square().mean().item<double>(),
          relative_l2(net->forward(training).squeeze(1), problem.exact(training))};
}

Config awaiting_loss_to_json(const LoggedEvaluation& e) {
  return non_finite_as_text(Config::array({e.step, e.errors.rel_l2, e.errors.mse, e.errors.rel_l2_train}));
}

LoggedEvaluation awaiting_loss_from_json(const Config& j) {
  const auto invalid = [] {
    return std::runtime_error(std::string("pinn: a checkpoint's ") + kAwaitingLoss +
                              " is not [step, rel_l2, mse, rel_l2_train] (each error a number, \"nan\", \"inf\", "
                              "\"-inf\" or null)");
  };
  if (!j.is_array() || j.size() != 4 || !j[0].is_number_integer() || j[0].get<int64_t>() < 0) throw invalid();
  // metric_number: a number, the strings awaiting_loss_to_json writes, or null.
  std::optional<double> errors[3];
  for (size_t i = 0; i < 3; ++i) {
    errors[i] = metric_number(j[i + 1]);
    if (!errors[i]) throw invalid();
  }
  return {j[0].get<int64_t>(), {*errors[0], *errors[1], *errors[2]}};
}

bool logged_last(const CsvTable& log, int64_t step) {
  return !log.rows.empty() && number_value(log.get(log.rows.size() - 1, "step")) == double(step);
}

double lowest(const CsvTable& log, const std::string& column) {
  double best = std::numeric_limits<double>::infinity();
  for (size_t r = 0; r < log.rows.size(); ++r) {
    const double v = number_value(log.get(r, column));
    if (v < best) best = v;  // NaN never compares lower
  }
  return best;
}

double at_lowest_loss(const CsvTable& log, const std::string& column) {
  double best_loss = std::numeric_limits<double>::infinity(), value = NAN;
  for (size_t r = 0; r < log.rows.size(); ++r) {
    const double loss = number_value(log.get(r, "loss"));
    if (loss < best_loss) best_loss = loss, value = number_value(log.get(r, column));
  }
  return value;
}

}  // namespace pln::exp::pinn
