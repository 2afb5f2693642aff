#pragma once
// A training loop's state as a checkpoint keeps it (its counters, its own
// values, its logs, the optimiser's step counts and learning rates, the
// random generators' states), and the reader that checks every field of it
// against the run before anything is built: JSON from a file anyone may have
// handed over. Needs no LibTorch (the fuzz targets build it without).

#include "records/csv.h"
#include "spec/config.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace pln::exp {

struct TrainingState {
  int64_t step = 0;              ///< optimiser steps taken
  int64_t epochs_done = 0;       ///< epochs finished (classifiers)
  int64_t images_seen = 0;       ///< training images stepped on (classifiers)
  double train_seconds = 0;      ///< in training steps, over every session
  double elapsed_seconds = 0;    ///< wall time of the run, over every session
  Config values = Config::object();       ///< the loop's own scalars (best accuracy so far, ...)
  std::map<std::string, CsvTable> logs;   ///< the rows of each log so far, by its file name
};

/// One value a loop keeps in TrainingState::values, as the reader checks it:
/// a number (one that is not finite included, written "nan", "inf" or
/// "-inf"), or an integer within the state's own step count or epochs done.
enum class StateField { kNumber, kStep, kEpoch };

/// What a training loop keeps in its TrainingState, and this run's sizes that
/// bound it: a checkpoint's training state is checked against it whole (every
/// field present, of its type and within these sizes, nothing else) before
/// anything is built from it and before "resumed" is printed, so that the
/// loop never meets a value it cannot use.
struct StateLayout {
  int64_t steps = 0;   ///< the optimiser steps this run takes
  int64_t epochs = 0;  ///< its epochs (0: a loop without epochs)
  int64_t images = 0;  ///< the training images it steps on over every epoch (0: none counted)
  struct Log {
    std::vector<std::string> columns;
    bool required = true;  ///< false: kept only by some configurations
  };
  std::map<std::string, Log> logs;  ///< by file name
  struct Value {
    std::vector<StateField> fields;  ///< one: a scalar; several: an array of them in this order
    bool required = true;
  };
  std::map<std::string, Value> values;  ///< by name
};

/// The loop's part of a training state document `doc` (a JSON object): the
/// counters within the layout's sizes, the durations finite and >= 0, exactly
/// the layout's values (numbers read back as numbers, NaN included) and logs
/// (each CSV text with its columns). Throws std::runtime_error naming
/// `where` (the file, then "state") and the field.
TrainingState read_training_state(const Config& doc, const StateLayout& layout, const std::string& where);

/// The optimiser's part of a training state: which parameters have state,
/// with their step counts, and each parameter group's learning rate.
struct SavedOptimizer {
  std::map<std::string, int64_t> steps;  ///< by parameter name
  std::vector<double> learning_rates;
};

/// `doc`'s "optimizer": its "kind" must be `kind`, each name of its "steps"
/// one of `parameters` with a count in 0..`step`, its "lr" a list of `groups`
/// finite numbers >= 0. Throws std::runtime_error naming `where` and the field.
SavedOptimizer read_saved_optimizer(const Config& doc, const std::string& kind,
                                    const std::vector<std::string>& parameters, size_t groups, int64_t step,
                                    const std::string& where);

/// `doc`'s "last_finite": 0 (no copies yet) or `parameters` (one copy each).
int64_t read_last_finite_count(const Config& doc, int64_t parameters, const std::string& where);

/// The bytes of LibTorch's CPU generator state (CPUGeneratorImplState in
/// ATen/CPUGeneratorImpl.cpp, the same from LibTorch 1.5 to 2.x).
constexpr size_t kCpuGeneratorStateBytes = 5056;
/// Words in the mt19937 state (at::MERSENNE_STATE_N).
constexpr int64_t kMersenneStateWords = 624;

/// `doc`'s "generators"."KEY": lowercase hex of a CPU generator's state,
/// checked as a state the mt19937 engine can run from (see
/// check_generator_state). Returns its bytes.
std::string read_generator_state(const Config& doc, const std::string& key, const std::string& where);

/// Throws std::runtime_error naming `where` unless `bytes` is a CPU
/// generator's state the mt19937 engine can run from: seeded, `left` in
/// 1..624 and `next` = 625 - left (or left 1: the next draw refills first),
/// since each draw reads state[next++] until left runs down and LibTorch's own
/// check (left in 1..624, next at most 624) lets the draws read past the 624
/// words; each word at most 32 bits, the cached normal samples' flags 0 or 1
/// and a cached sample finite.
void check_generator_state(std::string_view bytes, const std::string& where);

}  // namespace pln::exp
