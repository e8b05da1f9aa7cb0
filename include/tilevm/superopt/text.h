// The text form of superoptimizer graphs: printed so that a found graph can be read, saved and replayed,
// parsed back to the same graph (print(parse(print(g))) == print(g)). A kernel graph with tensor ops only is
// also the input format of tensor programs (docs/superopt.md):
//
//   kernel rmsnorm_linear {
//     input X [16, 64]
//     input W [64, 32]
//     n = rms_norm(X) eps=1e-6
//     Y = matmul(n, W)
//     output Y
//   }
//
// A statement is one line: `input NAME SHAPE`, `output NAME, ...`, or `NAME = OP(OPERANDS) KEY=VALUE...`
// (`(NAME, ...) = block(...) ... { ... }` and `thread` for ops with a body). `#` starts a comment.
#pragma once

#include <string>
#include <string_view>

#include "tilevm/superopt/graph.h"

namespace tilevm::superopt {

std::string print_graph(const Graph& graph);

// Throws Error "LINE:COL: message" on malformed text and on any graph error (shapes, levels), located at
// the statement that caused it.
Graph parse_graph(std::string_view text);

}  // namespace tilevm::superopt
