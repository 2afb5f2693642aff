#pragma once
// A CSV file of curves: one column per 1-D tensor (any device and floating
// dtype, written as float64 in shortest round-trip form), written atomically.

#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

namespace pln::exp {

/// Throws std::invalid_argument when the columns and header differ in number
/// or the columns in length.
void write_tensor_columns(const std::filesystem::path& path, const std::vector<std::string>& header,
                          const std::vector<torch::Tensor>& columns);

}  // namespace pln::exp
