// Layout inference for the tile layer (TileLang's, paper section 4.3): the first pass of transform::lower.
// It gives every fragment (AllocateFragment) a register layout and every shared tile that a Gemm reads and
// whose layout the program left out (AllocateShared(shape=)) a swizzled one, in three levels:
//
//   strict   a Gemm fixes its accumulator's layout (wgmma's accumulator over the warpgroups where the target
//            has wgmma and the operands allow it, else mma fragments over a warp partition) and the layouts
//            of register operands; its shared operands get tile_layouts.h's swizzle
//   common   a Copy between two register tiles gives both one layout, propagated until nothing changes
//   free     a fragment still open gets the coalesced copy layout of its shape
//
//   acc = AllocateFragment(f32, shape=[64, 64])    -->   acc = AllocateRegister(f32, layout=spatial(2, 2)...)
//   sa = AllocateShared(f16, shape=[64, 32])       -->   sa = AllocateShared(f16,
//   layout=(swizzle(...)).local(1, 8))
//
// Two operators that ask one tensor for different layouts are an error at the later one that names both
// operators and both layouts. A program without tile operators is returned as it is.
#pragma once

#include <optional>

#include "tilevm/ir/program.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/target/target.h"

namespace tilevm::tile {

// @pre `program` verifies and infer_threads ran (Program::threads is set). nullopt after reporting to `diags`
// when no layout satisfies the operators.
std::optional<ir::Program> infer_layouts(ir::Program program, Diagnostics& diags,
                                         const target::Target& target);

}  // namespace tilevm::tile
