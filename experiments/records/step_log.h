#pragma once
// The per-step logs of a training run (loss.csv, epochs.csv, ...), kept so
// that a killed run never leaves a torn line and a checkpoint can restore them.

#include "records/csv.h"

#include <filesystem>
#include <string>
#include <vector>

namespace pln::exp {

/// A per-step log: rows kept in memory and the whole file replaced atomically
/// every `flush_every` rows, on restore() and on flush(), so a killed run
/// leaves the rows of its last flush and never a torn line. Constructing one
/// writes nothing: a resume refused after it leaves the run's file as it was.
class StepLog {
 public:
  StepLog(std::filesystem::path path, std::vector<std::string> header, size_t flush_every = 200);
  void add(const std::vector<double>& values);
  void flush();
  /// The rows so far (for a checkpoint).
  const CsvTable& table() const { return table_; }
  /// Replaces the rows with a checkpoint's, whose header must be this log's
  /// (throws std::runtime_error naming the file otherwise), and writes them.
  void restore(const CsvTable& saved);

 private:
  std::filesystem::path path_;
  CsvTable table_;
  size_t flush_every_;
  size_t unflushed_ = 0;
};

}  // namespace pln::exp
