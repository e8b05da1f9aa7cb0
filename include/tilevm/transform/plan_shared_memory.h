// Shared-memory planning: every AllocateShared gets a byte offset in the block's dynamic shared memory.
//
// A tensor lives from its AllocateShared to its FreeShared, or to its last use when it is never freed; a use
// inside a loop that the allocation precedes keeps it alive to the end of that loop (the next iteration
// reads it again). Tensors whose lifetimes overlap get disjoint ranges; the others may share space. Offsets
// are aligned to 16 bytes (128 for swizzled layouts, whose XOR patterns assume 128-byte rows).
//
//   a = AllocateShared(f16, shape=[64, 64])  # shared [0, 8192)
//   ...
//   FreeShared(a)
//   c = AllocateShared(f32, shape=[64, 64])  # shared [0, 16384)      a is dead, its space is reused
//
// The pass records each range in its AllocateShared (AllocateSharedInst::placement) and the extent of all of
// them in Program::shared_bytes; the code generator reads them and places nothing itself.
#pragma once

#include "tilevm/ir/program.h"

namespace tilevm::transform {

// @pre `program` verifies.
ir::Program plan_shared_memory(ir::Program program);

}  // namespace tilevm::transform
