// Barriers for the tile layer: a tile program never writes Synchronize() for its own operators. Before each
// statement that reads a shared tensor another thread may have written since the last barrier, or writes
// one that another thread may still read or write, this pass inserts a Synchronize(); loops are followed
// around their back edge, branches merged.
//
//   for k in range(n):                       for k in range(n):
//       Copy(a[...], sa)                          Synchronize()        (the last iteration's Gemm read sa)
//       Gemm(sa, sb, acc)              -->        Copy(a[...], sa)
//                                                 Synchronize()        (sa was just written)
//                                                 Gemm(sa, sb, acc)
//
// Only synchronous accesses count: the asynchronous copies (CopyAsync, CopyTma) and DotAsync have their own
// wait protocols, which the program (or pipeline_loops) states, and warp-specialized regions are left alone.
// It runs on programs with tile operators only, after pipeline_loops and before lower_tile_ops.
#pragma once

#include "tilevm/ir/program.h"

namespace tilevm::tile {

ir::Program insert_barriers(ir::Program program);

}  // namespace tilevm::tile
