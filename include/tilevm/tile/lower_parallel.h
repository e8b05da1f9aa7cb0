// Lowering of Parallel loops (docs/language.md "The tile layer", "Parallel loops"): each assignment of the
// body becomes whole-tile VM instructions over the loop's layout (that of its register tiles, which
// infer_layouts made agree, else free_loop_layout), one instruction per operation of the expression:
//
//   for i, j in Parallel(BM, BN):                     t_0 = View(m, layout=<m's layout with j as extent 1>)
//       s[i, j] = exp(s[i, j] - m[i]) * scale   -->   t_1 = Sub(s, t_0)
//                                                     t_2 = Exp(t_1)
//                                                     t_3 = Mul(t_2, scale)
//                                                     Cast(t_3, dtype=f32, out=s)
//       y[r + i, j] = s[i, j]                          t_4 = Cast(s, dtype=f16)
//                                                     StoreGlobal(t_4, y, offset=[r, 0])
//
// A register tile that follows only some loop variables (m[i]) is viewed with extent 1 in the others and
// broadcasts; a global or shared tile is loaded (once per loop, while nothing in it writes that tensor) in
// the loop's layout reduced to the dimensions it follows. Operands of different dtypes compute in the wider
// one (f32 for f16 with bf16, and for integers with float scalars or float functions); the result converts
// to the target's dtype. Between assignments that touch the same shared or global tensor with one of them
// writing it, a Synchronize() orders the threads, since two accesses of different ranks meet different
// threads. Each statement is applied to the whole tile before the next: the loop's meaning is that of its
// statements applied in order to every index, which is what this computes because every index is the loop's
// own (parallel_binding.h).
#pragma once

#include <optional>

#include "tilevm/ir/program.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/target/target.h"

namespace tilevm::tile {

// @pre infer_layouts ran. nullopt after reporting an expression that has no element operand to compute on.
std::optional<ir::Program> lower_parallel(ir::Program program, Diagnostics& diags,
                                          const target::Target& target);

}  // namespace tilevm::tile
