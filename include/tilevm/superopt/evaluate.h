// Evaluation of a kernel graph on real numbers (double): the numeric reference that a lowered candidate
// will be compared with, and the tests' check that the graph semantics are the intended ones. Element-wise
// functions are the usual real ones: silu(x) = x / (1 + exp(-x)), gelu(x) = x * (1 + erf(x / sqrt 2)) / 2,
// relu(x) = max(x, 0).
#pragma once

#include <vector>

#include "tilevm/superopt/graph.h"

namespace tilevm::superopt {

// `inputs`: one row-major array per Input op of the kernel graph, in order. Returns one row-major array per
// output. Throws Error when the count or a size of the inputs is wrong.
std::vector<std::vector<double>> evaluate_real(const Graph& graph,
                                               const std::vector<std::vector<double>>& inputs);

}  // namespace tilevm::superopt
