// Splits a register-A Gemm of a pipelined step into groups along K, so that pipeline_loops can overlap the
// conversion of one group with the product of the group before (the quantized matmul's _wsr step):
//
//   sa = AllocateShared(f16, shape=[BM, BK])        sa_0, sa_1 = AllocateShared(f16, shape=[BM, 64]) ...
//   wf = AllocateFragment(f16, shape=[BN, BK])      wf_0, wf_1 = AllocateFragment(f16, shape=[BN, 64]) ...
//   for k in Pipelined(n, stages=S):                for k in Pipelined(n, stages=S):
//       Copy(a[r:, k * BK:], sa)                        Copy(a[r:, k * BK:], sa_0)
//       for i, j in Parallel(BN, BK):          -->      Copy(a[r:, k * BK + 64:], sa_1)
//           wf[i, j] = f(i, j)                          for i in Parallel(BN): x_0[i] = g(i)   (hoisted)
//       Gemm(wf, sa, acc, transpose_b=True)             for i, j in Parallel(BN, 64): wf_0[i, j] = f(i, j)
//                                                       Gemm(wf_0, sa_0, acc, transpose_b=True)
//                                                       for i, j in Parallel(BN, 64): wf_1[i, j] = f(i, 64 +
//                                                       j) Gemm(wf_1, sa_1, acc, transpose_b=True)
//
// where f's global reads that do not depend on j (a scale per row: s[bn * BN + i, k * BK / G]) are read
// once per step into a fragment x_q[i] before the first group: a global read between two products would
// keep them synchronous (pipeline_loops). Only on a target with wgmma, for a Gemm that infer_layouts will
// put on wgmma's register-A form (gemm_uses_wgmma), whose a is written by the Parallel loop just before it
// (one assignment, wf[i, j]) and whose b is a shared tile that one Copy of the loop fills, both allocated
// in the kernel's body and used nowhere else, with K = BK a multiple of 64 from 128 to 512 (groups of 64
// columns: 128-byte rows, wgmma's widest swizzle); no other Gemm into the accumulator (its layout would
// conflict with the groups'); and every read along j of shared or global memory, indexed j, base + j or
// j + base (the forms a Parallel loop binds; the group's offset goes into the base), none of a fragment.
// Anything else is left as written. The new tensors take names the program does not use.
#pragma once

#include <optional>

#include "tilevm/ir/program.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/target/target.h"

namespace tilevm::tile {

// @pre infer_threads ran (the program's threads are known).
std::optional<ir::Program> split_register_gemms(ir::Program program, Diagnostics& diags,
                                                const target::Target& target);

}  // namespace tilevm::tile
