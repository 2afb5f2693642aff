// The training state's reader on any text: the JSON a checkpoint's metadata
// holds, checked against a run's layout, optimiser and generators (those of
// `pln pinn --preset smoke --set steps=40`: its logs and values, Adam over
// six parameters in one group), as run/checkpoint.cpp checks it before
// building anything. Whatever it accepts must hold what the checks promise.

#include "records/json.h"
#include "run/training_state.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pln::exp;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const StateLayout layout{
      40, 0, 0,
      {{"train.csv", {{"step", "loss", "loss_pde", "loss_bc", "lr"}}},
       {"eval.csv", {{"step", "rel_l2", "mse", "rel_l2_train", "loss"}}},
       {"ntk.csv",
        {{"phase", "step", "point_set", "n_points", "trace", "lambda_max", "lambda_min", "cond", "eff_rank_90",
          "numerical_rank", "mean_self_kernel", "stable_rank"},
         false}}},
      {{"loss", {{StateField::kNumber}}},
       {"evaluation_awaiting_loss",
        {{StateField::kStep, StateField::kNumber, StateField::kNumber, StateField::kNumber}, false}}}};
  try {
    const Config doc = parse_json_text(text, "fuzz");
    const TrainingState state = read_training_state(doc, layout, "fuzz: state");
    if (state.step < 0 || state.step > layout.steps || state.epochs_done != 0 || state.images_seen != 0) std::abort();
    if (!state.values.at("loss").is_number()) std::abort();
    if (state.logs.at("train.csv").header.size() != 5) std::abort();
    const std::vector<std::string> parameters = {"linear0.weight", "linear0.bias", "linear1.weight",
                                                 "linear1.bias",   "linear2.weight", "linear2.bias"};
    const auto optimizer = read_saved_optimizer(doc, "adam", parameters, 1, state.step, "fuzz: state");
    for (const auto& [name, step] : optimizer.steps) {
      if (step < 0 || step > state.step) std::abort();
    }
    if (optimizer.learning_rates.size() != 1 || !std::isfinite(optimizer.learning_rates[0])) std::abort();
    const int64_t kept = read_last_finite_count(doc, 6, "fuzz: state");
    if (kept != 0 && kept != 6) std::abort();
    if (read_generator_state(doc, "default", "fuzz: state").size() != kCpuGeneratorStateBytes) std::abort();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
