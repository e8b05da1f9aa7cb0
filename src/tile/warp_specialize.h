// The kernel-level half of warp specialization (pipeline_loops.h, `warp_specialize=True`): once the
// pipeline has been split into a producer loop (its TMA copies) and a consumer loop (the body), the kernel
// around it is split too:
//
//   <prefix>                     <prefix: scalars, views, shared tensors and barriers: the whole block's>
//   <the pipelined loop>   -->   with Warpgroups(0, 1, registers=40):
//   <suffix>                         <producer loop>
//                                with Warpgroups(1, 1 + T / 128, registers=R):
//                                    <prefix: everything else (fragments, fills, ...)>
//                                    <consumer loop>
//                                    <suffix>
//
// The consumers are the kernel's T threads as the author wrote it (a region numbers its threads from 0, so
// every layout inferred for T threads holds); the block grows by the producer's 128. R is the most the
// register file allows the consumers beside the producer's 40, at most 256.
#pragma once

#include <optional>
#include <string>

#include "tilevm/ir/stmt.h"

namespace tilevm::tile {

// The kernel's new top-level block, or nullopt with the reason in *why when the kernel cannot be split:
// threads not whole warpgroups or too many with the producer, a region already there, a scalar of the
// block assigned after a consumer statement read it (or by the consumers: after the loop, or under a loop
// or branch before it), a shared tensor or barrier allocated under a branch or loop, an epilogue's
// allocation that takes a name of the block's, a return or Exit.
std::optional<ir::Block> split_warp_specialized(const ir::Block& prefix, ir::Block producer_loop,
                                                ir::Block consumer_loop, const ir::Block& suffix,
                                                int64_t threads, SourceLoc loc, std::string* why);

}  // namespace tilevm::tile
