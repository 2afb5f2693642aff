#pragma once
// The demo: one-hidden-layer networks whose only nonlinearity is a
// normalisation (LN-Net, PLN-Net) and a Tanh reference net, fitted to
// cos(3 pi x) on [-1, 1]. An LN-Net has at most one interior stationary point,
// so it cannot follow three oscillations whatever its width; a PLN-Net can.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pln::exp {

struct DemoConfig {
  int64_t steps = 3000;
  std::vector<int64_t> widths = {64, 512};
  int64_t group = 4;           ///< features per PLN group
  int64_t train_points = 256;  ///< evenly spaced on [-1, 1]
  int64_t test_points = 1001;  ///< evenly spaced on [-1, 1]
  double lr = 3e-3;            ///< Adam, cosine-decayed to lr / 100
  uint64_t seed = 0;
  std::string device = "cpu";  ///< cpu, cuda or cuda:N
};

struct DemoResult {
  std::string model;  ///< "LN-Net", "PLN(4)-Net", "Tanh-Net"
  int64_t width = 0;
  double max_error = 0;    ///< L-infinity error on the test grid
  double rel_l2 = 0;       ///< ||f - f*|| / ||f*|| on the test grid
  double final_loss = 0;   ///< training MSE at the last step
  double seconds = 0;
};

/// Validates the configuration; throws std::invalid_argument naming the field.
void validate(const DemoConfig& config);

/// Trains every model of the demo; `on_done` (optional) sees each result as it
/// finishes. Throws std::runtime_error naming the model if its loss stops being finite.
std::vector<DemoResult> run_demo(const DemoConfig& config,
                                 const std::function<void(const DemoResult&)>& on_done = {});

}  // namespace pln::exp
