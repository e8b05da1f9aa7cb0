// Which shared layouts a TMA tile copy can write: the one rule that the verifier (is this CopyTma valid?),
// the emitter (the swizzle its tensor map asks for) and hence the runtime's tensor map follow.
//
// The TMA writes a box densely, innermost dimension fastest, and can permute the 16-byte chunks of each
// row of S = 32, 64 or 128 bytes by the row (the swizzle that wgmma operands use, target/wgmma.h). So a
// destination is either row-major, or rows of exactly S bytes in the swizzled form of wgmma_swizzled_tile,
// the leading dimensions (a pipeline's stages) stacked row-major:
//
//   [STAGES, 64, 64] f16, 128-byte swizzle:  local(STAGES, 1, 1).local(8, 1).swizzle(local(8, 8),
//   dim=1).local(1, 8)
#pragma once

#include "tilevm/layout/layout.h"

namespace tilevm::target {

// 0 for a row-major destination, S for the S-byte swizzled form, -1 for any other layout. `layout` is the
// destination tensor's whole (T = 1) layout, `elem_bits` its element size.
int tma_swizzle_bytes(const layout::Layout& layout, int elem_bits);

}  // namespace tilevm::target
