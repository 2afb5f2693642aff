#include "records/tensor_csv.h"

#include "system/atomic_file.h"
#include "records/csv.h"

#include <fmt/format.h>

#include <stdexcept>

namespace pln::exp {

void write_tensor_columns(const std::filesystem::path& path, const std::vector<std::string>& header,
                          const std::vector<torch::Tensor>& columns) {
  if (columns.size() != header.size() || columns.empty()) {
    throw std::invalid_argument(fmt::format("{}: {} columns for {} names", path.string(), columns.size(), header.size()));
  }
  std::vector<torch::Tensor> host;
  for (const auto& column : columns) {
    host.push_back(column.detach().reshape(-1).to(torch::kCPU, torch::kFloat64).contiguous());
    if (host.back().numel() != host.front().numel()) {
      throw std::invalid_argument(fmt::format("{}: columns of {} and {} values", path.string(),
                                              host.front().numel(), host.back().numel()));
    }
  }
  CsvTable table;
  table.header = header;
  for (int64_t i = 0; i < host.front().numel(); ++i) {
    std::vector<std::string> row;
    for (const auto& column : host) row.push_back(number_text(column.data_ptr<double>()[i]));
    table.rows.push_back(std::move(row));
  }
  write_file_atomic(path, to_csv(table));
}

}  // namespace pln::exp
