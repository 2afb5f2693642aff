#pragma once
// Statistics the figures' tables report over a grid's records.

#include <vector>

namespace pln::exp {

/// Median of `values`; NaN when empty.
double median(std::vector<double> values);

}  // namespace pln::exp
