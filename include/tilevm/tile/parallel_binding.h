// How a Parallel loop's accesses bind to the loop (docs/language.md "The tile layer", "Parallel loops"):
// which loop dimension each index of an access follows, and for memory tensors the offset of the tile the
// loop touches. Layout inference and lower_parallel read the same binding, so a body that cannot be bound
// to threads is reported once, at the access, with the reason:
//
//   for i, j in Parallel(BM, BN):
//       acc[i, j] = acc[i, j] + bias[n0 + j]     acc: dims [0, 1] (full: the loop's layout)
//                                                bias: dims [1], offset [n0] (a [BN] tile at n0)
//       m[i] = ...                               refused: the target does not follow j, so every j would
//                                                write the same element
//
// A register tensor's indices are the loop variables themselves, in loop order (a subset of them reads a
// broadcast: m[i] in a loop over (i, j)); a global or shared tensor's are `v`, `base + v` or `v + base` in
// loop order, or loop-invariant (a fixed index). A value may also use the loop variables as numbers (index
// values: `where(j < n, s[i, j], 0.0)`), through the operators ir::element_binary_op maps; lower_parallel
// makes them Iota tiles.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tilevm/ir/program.h"
#include "tilevm/layout/layout.h"
#include "tilevm/support/diagnostics.h"

namespace tilevm::tile {

struct BoundAccess {
  const ir::ElementAccess* access = nullptr;
  // Per index of the access: the loop dimension it follows, or -1 for a loop-invariant (fixed) index.
  std::vector<int> dims;
  // Per index: the loop-invariant part (the base, the fixed index, or 0).
  std::vector<ir::Expr> offsets;
  bool memory = false;  // a global or shared tensor (else a register tensor)
  // The loop dimensions the access follows, in order (the dims without the -1s).
  std::vector<int> loop_dims() const;
  // Whether it follows every loop dimension (a register access with the loop's shape).
  bool full(size_t rank) const { return loop_dims().size() == rank; }
};

struct ParallelBinding {
  layout::Index shape;  // the extents
  struct Assign {
    BoundAccess target;
    std::vector<BoundAccess> reads;  // the value's accesses, in evaluation order
  };
  std::vector<Assign> body;
  // Every access in program order (each assignment's reads, then its target), until `fn` returns false.
  void for_each_access(const std::function<bool(const BoundAccess&)>& fn) const;
};

// The loop dimension whose variable `e` is, or -1; the first loop variable `e` mentions, or null.
int loop_dimension(const ir::ParallelStmt& p, const ir::Expr& e);
const ir::VarNode* first_loop_variable(const ir::ParallelStmt& p, const ir::Expr& e);

// The binding of every access of `p`, or nullopt after reporting each access that cannot be bound.
// @pre the program verified
std::optional<ParallelBinding> bind_parallel(const ir::ParallelStmt& p, Diagnostics& diags);

// The loop's layout when no register tile of its shape gives one (layout inference's free level): the
// coalesced copy_layout of its extents for the dtype of its first memory access (16-byte runs of that),
// else of its first register access. nullopt with the reason in `why` when the threads do not spread.
std::optional<layout::Layout> free_loop_layout(const ParallelBinding& b, int64_t threads, std::string* why);

// The layout of a register access following `dims` of a loop laid out as `loop`: `loop` itself when it
// follows every dimension, else `loop` reduced over the others (replicated where they spread threads).
layout::Layout access_layout(const layout::Layout& loop, const std::vector<int>& dims);

}  // namespace tilevm::tile
