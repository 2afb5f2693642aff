// Every family's run, stopped after each checkpoint and resumed until done,
// ends with the same summary and the same logs as a run never interrupted
// (same machine and thread count): what lets a grid cell killed at any moment
// resume without changing its records.

#include "spec/experiment.h"
#include "records/json.h"
#include "records/safetensors.h"
#include "run/run.h"
#include "system/atomic_file.h"
#include "experiment_helpers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <map>
#include <optional>

namespace pln::exp {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::fresh_dir;
using test::slurp;

struct ResumeCase {
  std::string family;
  std::vector<std::string> sets;  ///< on the smoke preset
  bool needs_fashion_mnist;
  size_t sessions;                ///< checkpoints + 1
};

// Every log of a run directory, the wall-clock columns left out.
std::map<std::string, CsvTable> logs_of(const fs::path& dir) {
  std::map<std::string, CsvTable> logs;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".csv") continue;
    auto t = read_csv(entry.path());
    if (const auto seconds = t.find("seconds")) {
      t.header.erase(t.header.begin() + static_cast<long>(*seconds));
      for (auto& row : t.rows) row.erase(row.begin() + static_cast<long>(*seconds));
    }
    logs[entry.path().filename().string()] = t;
  }
  return logs;
}

Config without_timings(Config summary) {
  for (const char* key : {"seconds", "steps_per_s", "images_per_s"}) summary.erase(key);
  return summary;
}

void PrintTo(const ResumeCase& c, std::ostream* os) { *os << c.family; }

// Runs the case whole, then in sessions each stopped after one checkpoint;
// returns the summary of the whole run.
Config expect_resumed_equals_whole(const ResumeCase& p) {
  if (p.needs_fashion_mnist && !fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    ADD_FAILURE() << "dataset-fashion-mnist is not installed (scripts/bootstrap installs it)";
    return {};
  }
  torch::set_num_threads(1);
  const auto& e = find_experiment(p.family);
  EXPECT_TRUE(e.resumable);
  const Config config = resolve_config(e, "smoke", p.sets);
  const auto dir = fresh_dir("resume-" + p.family);
  fs::create_directories(dir / "whole");
  fs::create_directories(dir / "parts");
  const Config whole = e.run(config, RunContext{dir / "whole"});

  std::optional<Config> resumed;
  size_t sessions = 0;
  while (!resumed && sessions < 20) {
    ++sessions;
    try {
      resumed = e.run(config, RunContext{dir / "parts", sessions > 1, c10::kCPU, 1});
    } catch (const SessionStopped&) {
      EXPECT_TRUE(fs::exists(dir / "parts" / "checkpoint.safetensors"));
    }
  }
  if (!resumed) {
    ADD_FAILURE() << "the run did not finish in 20 sessions";
    return whole;
  }
  EXPECT_EQ(sessions, p.sessions);
  EXPECT_EQ(without_timings(*resumed), without_timings(whole));
  const auto whole_logs = logs_of(dir / "whole"), resumed_logs = logs_of(dir / "parts");
  EXPECT_EQ(resumed_logs.size(), whole_logs.size());
  for (const auto& [name, table] : whole_logs) {
    if (!resumed_logs.count(name)) {
      ADD_FAILURE() << name << " is missing after the resumed sessions";
      continue;
    }
    EXPECT_EQ(resumed_logs.at(name).header, table.header) << name;
    EXPECT_EQ(resumed_logs.at(name).rows, table.rows) << name;
  }
  fs::remove_all(dir);
  return whole;
}

class Resume : public ::testing::TestWithParam<ResumeCase> {};

TEST_P(Resume, StoppedAfterEveryCheckpointEqualsUninterrupted) { expect_resumed_equals_whole(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    EveryFamily, Resume,
    ::testing::Values(ResumeCase{"pinn", {"steps=30", "checkpoint_every=10", "eval_every=10", "ntk_every=10"}, false, 3},
                      ResumeCase{"fourier", {"steps=60", "checkpoint_every=20", "log_every=7"}, false, 3},
                      // Augmentation draws from the run's own generator: its state is checkpointed.
                      ResumeCase{"cnn", {"epochs=3", "n_train=128", "augment=true"}, true, 4},
                      ResumeCase{"vgg", {"epochs=2", "n_train=64", "n_test=64", "augment=true"}, true, 3},
                      // Stochastic depth and batch order drawn from (seed, epoch).
                      ResumeCase{"vit", {"epochs=3", "n_train=96", "n_test=64", "drop_path=0.1", "label_smoothing=0.1"}, true, 4}),
    [](const auto& info) { return info.param.family; });

// A run that diverges at the first step after a checkpoint goes back to the
// same last finite parameters whether or not it was resumed in between.
TEST(Resume, DivergingJustAfterACheckpoint) {
  const Config whole = expect_resumed_equals_whole({"fourier", {"steps=10", "checkpoint_every=1", "lr=1e30", "warmup=0"}, false, 2});
  EXPECT_EQ(whole.value("diverged_at", int64_t{-1}), 1);
  EXPECT_TRUE(std::isfinite(whole.value("rel_l2", double(NAN))));
}

TEST(Resume, PinnDivergingJustAfterACheckpoint) {
  const Config whole = expect_resumed_equals_whole(
      {"pinn", {"steps=10", "checkpoint_every=1", "lr=1e300", "optimizer=sgd", "norm=none", "act=tanh", "ntk_every=0"},
       false, 2});
  EXPECT_EQ(whole.value("diverged_at", int64_t{-1}), 1);
  EXPECT_EQ(whole.value("steps_done", int64_t{-1}), 1);
  EXPECT_TRUE(std::isfinite(whole.value("rel_l2", double(NAN))));
  EXPECT_TRUE(std::isfinite(whole.value("final_loss", double(NAN))));
}

// An evaluation whose errors are not finite (the parameters after a step of
// lr 1e300) waits in the checkpoint for the next step's loss: written as
// "inf" or "nan", it is read back, and the run resumes.
TEST(Resume, PinnEvaluationNotFiniteInTheCheckpointResumes) {
  const Config whole = expect_resumed_equals_whole(
      {"pinn", {"steps=10", "checkpoint_every=1", "eval_every=1", "lr=1e300", "optimizer=sgd", "norm=none",
                "act=tanh", "ntk_every=0"},
       false, 2});
  EXPECT_EQ(whole.value("diverged_at", int64_t{-1}), 1);
  EXPECT_TRUE(std::isfinite(whole.value("rel_l2", double(NAN))));
}

// The checkpoint `file` rewritten with its training state edited, its
// tensors as they were.
void edit_state(const fs::path& file, const std::function<void(Config&)>& edit) {
  const std::string bytes = read_regular_file(file, uint64_t{1} << 30);
  const auto parsed = parse_safetensors(bytes, file.string());
  std::vector<SafetensorsBlob> blobs;
  for (const auto& [name, entry] : parsed.tensors) {
    blobs.push_back({name, entry.dtype, entry.shape,
                     std::string_view(bytes).substr(parsed.data_start + entry.begin, entry.end - entry.begin)});
  }
  auto metadata = parsed.metadata;
  Config state = Config::parse(metadata.at("state"));
  edit(state);
  metadata["state"] = state.dump();
  write_file_atomic(file, safetensors_bytes(blobs, metadata));
}

// Every field of the training state is checked (present, of its type, within
// this run's sizes, nothing unknown) before anything is built from it and
// before "resumed" is printed; the error names the file and the field.
TEST(Resume, EveryFieldOfTheTrainingStateIsCheckedBeforeResuming) {
  torch::set_num_threads(1);
  const auto& e = find_experiment("fourier");
  const auto dir = fresh_dir("resume-crafted-state");
  const Config config = resolve_config(e, "smoke", {"steps=40", "checkpoint_every=20"});
  EXPECT_THROW(e.run(config, RunContext{dir, false, c10::kCPU, 1}), SessionStopped);
  const auto file = dir / "checkpoint.safetensors";
  const std::string original = slurp(file);
  // The generator's state with left = next = 624: LibTorch's own check takes
  // it, though its draws would read past the 624 words of the state.
  const auto past_the_state = [](Config& state) {
    auto hex = state["generators"]["default"].get<std::string>();
    hex.replace(16, 8, "70020000");
    hex.replace(32, 16, "7002000000000000");
    state["generators"]["default"] = hex;
  };
  const std::vector<std::pair<std::function<void(Config&)>, std::string>> cases = {
      {[](Config& s) { s["step"] = 41; }, "state.step is 41, not a count in 0..40"},
      {[](Config& s) { s["epochs_done"] = 1; }, "state.epochs_done is 1, not a count in 0..0"},
      {[](Config& s) { s["images_seen"] = -1; }, "state.images_seen is -1, not a count in 0..0"},
      {[](Config& s) { s["logs"].erase("train.csv"); }, "state.logs.train.csv is missing"},
      {[](Config& s) { s["logs"]["other.csv"] = "a\n"; }, "state.logs.other.csv is not a log this run keeps"},
      {[](Config& s) { s["logs"]["train.csv"] = "x,y\n1,2\n"; },
       "state.logs.train.csv has the columns (x,y), this run's are (step,loss,lr)"},
      {[](Config& s) { s["logs"]["train.csv"] = 7; }, "state.logs.train.csv is not a string"},
      {[](Config& s) { s["values"]["loss"] = Config::array({1}); }, "state.values.loss is [1], not a number"},
      {[](Config& s) { s["values"].erase("loss"); }, "state.values.loss is missing"},
      {[](Config& s) { s["values"]["best"] = 1; }, "state.values.best is not a value this run keeps"},
      {[](Config& s) { s["train_seconds"] = "fast"; }, "state.train_seconds is \"fast\", not a number"},
      {[](Config& s) { s["elapsed_seconds"] = "-inf"; }, "state.elapsed_seconds is -inf, not a finite number >= 0"},
      {[](Config& s) { s["optimizer"]["lr"] = Config::array({"x"}); }, "state.optimizer.lr[0] is \"x\", not a number"},
      {[](Config& s) { s["optimizer"]["steps"].begin().value() = 21; }, "not a count in 0..20 (this run's)"},
      {[](Config& s) { s.erase("generators"); }, "state.generators is missing"},
      {past_the_state, "state.generators.default: next is 624 with left 624"},
  };
  for (const auto& [edit, expected] : cases) {
    write_file_atomic(file, original);
    edit_state(file, edit);
    testing::internal::CaptureStdout();
    const auto message = error_of([&] { e.run(config, RunContext{dir, true, c10::kCPU, 1}); });
    const auto said = testing::internal::GetCapturedStdout();
    EXPECT_NE(message.find(file.string()), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(said.find("resumed"), std::string::npos) << expected;
  }
  // A loss that is not finite is written "nan" and read back.
  write_file_atomic(file, original);
  edit_state(file, [](Config& s) {
    EXPECT_TRUE(s["values"]["loss"].is_number());
    s["values"]["loss"] = "nan";
  });
  testing::internal::CaptureStdout();
  EXPECT_NO_THROW(e.run(config, RunContext{dir, true, c10::kCPU, 1}));
  EXPECT_NE(testing::internal::GetCapturedStdout().find("resumed from"), std::string::npos);
  fs::remove_all(dir);
}

// A refused checkpoint leaves the run's logs as they were (none is rewritten
// before the checkpoint is accepted).
TEST(Resume, CheckpointOfAnotherConfigurationIsRefused) {
  for (const std::string family : {"fourier", "pinn"}) {
    const auto& e = find_experiment(family);
    const auto dir = fresh_dir("resume-other-" + family);
    const Config config = resolve_config(e, "smoke", {"steps=40", "checkpoint_every=20"});
    EXPECT_THROW(e.run(config, RunContext{dir, false, c10::kCPU, 1}), SessionStopped);
    const std::vector<std::string> logs = family == "pinn" ? std::vector<std::string>{"train.csv", "eval.csv"}
                                                           : std::vector<std::string>{"train.csv"};
    for (const auto& log : logs) write_file_atomic(dir / log, "step,loss\n1,0.5\n");
    const Config other = resolve_config(e, "smoke", {"steps=40", "checkpoint_every=20", "lr=0.5"});
    const auto message = error_of([&] { e.run(other, RunContext{dir, true}); });
    EXPECT_NE(message.find("was written with another configuration (lr: "), std::string::npos) << message;
    EXPECT_NE(message.find(" -> 0.5)"), std::string::npos) << message;
    for (const auto& log : logs) EXPECT_EQ(slurp(dir / log), "step,loss\n1,0.5\n") << family << " " << log;
    fs::remove_all(dir);
  }
}

TEST(Presets, AChangeToAKeyTheDefaultsLackIsAnError) {
  Experiment e("toy", "a toy family",
               KeyTable("toy", {integer("steps", 10, at_least(1), "steps"), number("lr", 0.1, above(0), "step size")}));
  e.presets = {{"smoke", {{"steps", 2}}}, {"typo", {{"setps", 2}}}};
  EXPECT_EQ(e.preset("smoke").at("steps").get<int64_t>(), 2);
  EXPECT_EQ(e.preset("smoke").at("lr").get<double>(), 0.1);
  EXPECT_NE(error_of([&] { e.preset("typo"); }).find("preset 'typo' sets 'setps', which the defaults lack"),
            std::string::npos);
  EXPECT_NE(error_of([&] { e.preset("huge"); }).find("unknown preset 'huge'; known: smoke, typo"), std::string::npos);
  EXPECT_EQ(e.preset_names(), (std::vector<std::string>{"smoke", "typo"}));
}

TEST(Presets, StepKeysOutOfRangeNameTheKeyAndTheBound) {
  const auto dir = fresh_dir("resume-ranges");
  for (const char* family : {"pinn", "fourier"}) {
    const auto& e = find_experiment(family);
    const auto message = [&](const std::string& set) {
      return error_of([&] { e.run(resolve_config(e, "smoke", {set}), RunContext{dir}); });
    };
    EXPECT_NE(message("checkpoint_every=-1").find(std::string(family) + ": checkpoint_every must be >= 0, got -1"),
              std::string::npos) << family;
    EXPECT_NE(message("steps=0").find(std::string(family) + ": steps must be >= 1, got 0"), std::string::npos)
        << family;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pln::exp
