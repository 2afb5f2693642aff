#pragma once
// A PINN run's test errors, the rows of eval.csv they make, and the best
// errors read back from that log.
//
// The errors: on the evenly spaced grid, and on the training points as
// DeepXDE's "l2 relative error" takes it when no test set is given; and the
// training loss at the same parameters, which DeepXDE computes at every
// logged step to find its best. The training step after an evaluation
// computes that loss first, before it moves the parameters, so an evaluation
// waits for it (pinn.cpp, run); a checkpoint keeps the one waiting.

#include "pinn/network.h"
#include "pinn/problem.h"
#include "records/csv.h"
#include "spec/config.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace pln::exp::pinn {

struct Evaluation {
  double rel_l2 = NAN, mse = NAN, rel_l2_train = NAN, loss = NAN;
};

/// The errors of `net` on `grid` and on the `training` points (the loss left NaN).
Evaluation evaluate(PinnNet& net, const Problem& problem, const torch::Tensor& grid, const torch::Tensor& training);

/// An evaluation of the parameters after `step` steps.
struct LoggedEvaluation {
  int64_t step = 0;
  Evaluation errors;
};

/// The key of a checkpoint's values that holds the evaluation waiting for its loss.
constexpr const char* kAwaitingLoss = "evaluation_awaiting_loss";

/// [step, rel_l2, mse, rel_l2_train], an error that is not finite as the
/// string "nan", "inf" or "-inf" (JSON has no such numbers: nlohmann would
/// write null, which a checkpoint's reader could not tell from a missing value).
Config awaiting_loss_to_json(const LoggedEvaluation& e);

/// What awaiting_loss_to_json wrote; an error may also be null, NaN as
/// checkpoints written before these strings hold it. Anything else throws
/// std::runtime_error naming the key.
LoggedEvaluation awaiting_loss_from_json(const Config& j);

/// True when the last row of eval.csv `log` is the evaluation after `step` steps.
bool logged_last(const CsvTable& log, int64_t step);

/// The lowest value of a column of eval.csv: the best error logged during the run.
double lowest(const CsvTable& log, const std::string& column);

/// A column of eval.csv at the logged step of lowest training loss (the first
/// of equal ones): DeepXDE's best_metrics (model.py, TrainState.update_best).
double at_lowest_loss(const CsvTable& log, const std::string& column);

}  // namespace pln::exp::pinn
