// Two register layouts that give every thread the same elements in a different slot order.
//
// Cast(a, dtype=, layout=L) converts and reorders each thread's slots in one step (an extension of
// the language, docs/language.md section 5): no data crosses threads, so the reordering is a fixed
// renaming of registers that the code generator folds into the converter. It exists for sub-byte weights
// stored in an order that converts cheaply (codes of an f16 pair 16 bits apart in one word) but that Dot
// cannot consume:
//
//   from = column_local(2, 2)     slots 0, 1, 2, 3 hold (0,0) (1,0) (0,1) (1,1)
//   to   = local(2, 2)            slots 0, 1, 2, 3 hold (0,0) (0,1) (1,0) (1,1)
//   slot_permutation(from, to).slots == {0, 2, 1, 3}: slot i of `to` is slot slots[i] of `from`
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilevm/layout/layout.h"

namespace tilevm::layout {

struct SlotPermutation {
  // slots[i]: the slot of the source layout that holds, in every thread, the element the target layout
  // holds in slot i. Empty when error is set.
  std::vector<int64_t> slots;
  // Why no permutation exists, with concrete values ("thread 3 holds (1, 0) in slot 2 of the new layout but
  // not in the operand's"); empty on success.
  std::string error;
};

// The thread-independent slot renaming from `from` to `to`: they must have the same shape, thread count and
// slot count, every thread must hold the same elements in both, and the renaming must be the same for every
// thread (registers are named at compile time).
SlotPermutation slot_permutation(const Layout& from, const Layout& to);

}  // namespace tilevm::layout
