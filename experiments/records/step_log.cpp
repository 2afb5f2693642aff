#include "records/step_log.h"

#include "system/atomic_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace pln::exp {

StepLog::StepLog(std::filesystem::path path, std::vector<std::string> header, size_t flush_every)
    : path_(std::move(path)), flush_every_(flush_every == 0 ? 1 : flush_every) {
  table_.header = std::move(header);
}

void StepLog::add(const std::vector<double>& values) {
  if (values.size() != table_.header.size()) {
    throw std::logic_error(fmt::format("{}: row of {} values for {} columns", path_.string(),
                                       values.size(), table_.header.size()));
  }
  std::vector<std::string> row;
  row.reserve(values.size());
  for (double v : values) row.push_back(number_text(v));
  table_.rows.push_back(std::move(row));
  if (++unflushed_ >= flush_every_) flush();
}

void StepLog::restore(const CsvTable& saved) {
  if (saved.header != table_.header) {
    throw std::runtime_error(fmt::format("{}: the checkpoint's rows have other columns ({}) than this run's ({})",
                                         path_.string(), fmt::join(saved.header, ","), fmt::join(table_.header, ",")));
  }
  table_.rows = saved.rows;
  flush();
}

void StepLog::flush() {
  write_file_atomic(path_, to_csv(table_));
  unflushed_ = 0;
}

}  // namespace pln::exp
