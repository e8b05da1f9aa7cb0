// The last pass of the tile layer: every tile operator becomes the VM instructions that do its work, with the
// layouts infer_layouts chose (tile_layouts.h for the temporaries), so that the program that leaves it is
// an ordinary one for the interpreter and the code generator.
//
//   Copy(g[...], s)        r = LoadGlobal(g[...], layout=<copy layout>); StoreShared(r, s)
//   Copy(s, r)             LoadShared(s, layout=<r's layout>, out=r)
//   Copy(r, g[...])        StoreGlobal(r, g[...])               (a Cast first when the dtypes differ)
//   Copy(s, g[...])        on Hopper, when the TMA stores s in one box into rows of a constant multiple of
//                          16 bytes: StoreTma(s, g[...]); StoreTmaWait(0)
//                          (elsewhere through registers, as between any two memories)
//   Gemm(sa, sb, acc)      for kk in range(K / 16):  a = LoadShared(sa, layout=<A>, offset=[0, kk * 16])
//                                                    b = LoadShared(sb, layout=<B>, offset=[kk * 16, 0])
//                                                    Dot(a, b, acc, out=acc)
//   Gemm(sa, sb, acc, transpose_b=True)   Dot(sa, sb, acc, transpose_b=True, out=acc) where infer_layouts
//                          gave acc wgmma's accumulator layout (tile_layouts.h, gemm_uses_wgmma)
//   Fill(r, v)             the init= of r's AllocateRegister when it directly follows it, else
//                          t = AllocateRegister(..., init=v); Cast(t, out=r)
#pragma once

#include <optional>

#include "tilevm/ir/program.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/target/target.h"

namespace tilevm::tile {

// @pre infer_layouts ran (every fragment has a layout). nullopt after reporting when an operator cannot be
// lowered (a copy whose tile no thread count spreads over).
std::optional<ir::Program> lower_tile_ops(ir::Program program, Diagnostics& diags,
                                          const target::Target& target);

}  // namespace tilevm::tile
