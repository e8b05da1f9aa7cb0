// What the body of a warp-specialized region (`with Warpgroups(...)`, docs/language.md section 5) may not
// hold, one statement at a time. The verifier reports each (verifier/verify_regions.cpp, in its own words);
// the tile layer's warp specialization declines a kernel whose consumers would hold one
// (src/tile/warp_specialize.cpp), so that the two agree on the rule.
#pragma once

#include "tilevm/ir/stmt.h"

namespace tilevm::ir {

enum class RegionBan {
  None,
  Return,       // `return`: a region ends only at its end (the block waits for every region)
  Exit,         // Exit(): the same
  Allocation,   // AllocateShared, FreeShared, AllocateBarrier: the whole block allocates, before its regions
  Region,       // a region inside a region: regions do not nest
  ClusterSync,  // ClusterSync(): every thread of every block of the cluster takes part
};

// The rule `s` itself breaks inside a region (not its nested statements), or None.
RegionBan region_ban(const Stmt& s);
// "a return", "an Exit()", "a shared tensor or barrier allocated or freed", "a warp-specialized region of
// its own", "a ClusterSync()" (for a sentence such as "the kernel has X, which a region cannot hold"); "" for
// None.
const char* region_ban_text(RegionBan ban);

}  // namespace tilevm::ir
