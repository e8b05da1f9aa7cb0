// Thread graphs by rule (Mirage, paper section 4.2): the search does not enumerate thread graphs; it fuses
// element-wise chains of block ops into thread ops, as operator fusion does.
//
//   t = mul(a, b)          (u) = thread(a, b) {
//   e = exp(t)        ->     input a' ...; input b' ...
//   u = silu(e)              t = mul(a', b'); e = exp(t); u = silu(e)
//                            output u
//                          }
//
// A chain is a run of element-wise ops (add, mul, div, exp, sqrt, square, silu, gelu, relu) in which each
// op's result is used by the next op only, of at least two ops; the thread op takes the chain's place at its
// last op, where every operand from outside the chain is already made.
#pragma once

#include "tilevm/superopt/graph.h"

namespace tilevm::superopt {

// `kernel` with every element-wise chain of every block graph fused into a thread op. Tensor names are
// kept: the thread op's result has the chain's last name.
Graph fuse_elementwise(const Graph& kernel);

}  // namespace tilevm::superopt
