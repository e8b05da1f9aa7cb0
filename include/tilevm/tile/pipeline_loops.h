// Software pipelining for the tile layer (TileLang's Pipelined, paper section 4.3): a loop with stages=S
// (`for k in Pipelined(n, stages=S)`, or `range(..., stages=S)`) whose body copies global tiles into shared
// tiles gets S buffers of each such tile and asynchronous copies S - 1 iterations ahead:
//
//   sa = AllocateShared(f16, shape=[BM, BK])       sa = AllocateShared(f16, layout=local(S, 1, 1).<sa's>)
//   for k in Pipelined(n, stages=S):               for p in range(S - 1):
//       Copy(a[..k..], sa)                   -->       if p < n: CopyAsync(sa[p], a[..p..])
//       Gemm(sa, sb, acc)                              CopyAsyncCommitGroup()
//                                                  for k in range(n):
//                                                      CopyAsyncWaitGroup(S - 2)
//                                                      Synchronize()
//                                                      if k + S - 1 < n: CopyAsync(sa[(k + S - 1) % S], a[..k
//                                                      + S - 1..]) CopyAsyncCommitGroup() Gemm(sa[k % S],
//                                                      sb[k % S], acc)
//                                                  CopyAsyncWaitGroup(0)
//
// The one Synchronize both publishes iteration k's tiles and tells every thread that all have finished
// iteration k - 1, whose buffer the refill overwrites. A copy is pipelined when it is a statement of the
// loop body itself (not under a branch), from a global view into a whole shared tensor of the same dtype
// that is allocated before the loop, used nowhere outside it and written by nothing else in it; the loop's
// step must be a positive constant. Other copies stay as they are (insert_barriers synchronizes them).
//
// Where infer_layouts put a Gemm of the body on wgmma (`wgmma=True`), both its operands
// are buffered here and nothing else in the body names the accumulator, the Gemm runs asynchronously, one
// step deep, and the refill waits for the previous step's product instead of preceding the Gemm:
//
//       CopyAsyncWaitGroup(S - 2)
//       Synchronize()
//       DotAsync(sa[k % S], sb[k % S], acc, transpose_b=True)
//       DotAsyncWait(1)                 (step k - 1's product is done, in this warpgroup)
//       Synchronize()                   (... in every warpgroup: its stage may be refilled)
//       if k + S - 1 < n: CopyAsync(sa[(k + S - 1) % S], ...) ...
//       CopyAsyncCommitGroup()
//   DotAsyncWait(0) after the loop.
//
// With `tma=True` on a Hopper target, and every tile in the tile layer's swizzled layout with rows of 32, 64
// or 128 bytes (the TMA's swizzle modes), the copies are CopyTma on one barrier per stage instead, all S
// stages in flight from the start (the global tensors' rows must then be 16-byte multiples: the tensor maps
// are checked at launch):
//
//   full = AllocateBarrier(count=1, shape=[S])
//   for p in range(S): if p < n: BarrierArrive(full[p], tx=<bytes of the stage>); CopyTma(sa[p], a[..p..],
//   barrier=full[p]) ... for k in range(n):
//       BarrierWait(full[k % S], parity=k / S % 2)
//       <body on stage k % S>
//       Synchronize()
//       if k + S < n: BarrierArrive(full[k % S], ...); CopyTma(sa[k % S], a[..k + S..], ...) ...
//
// and with an asynchronous Gemm the refill follows its DotAsyncWait(1) + Synchronize() and fills stage
// (k - 1) % S with iteration k - 1 + S, as examples/gemm_f16_wgmma.tile does by hand.
//
// With `warp_specialize=True` as well, a loop of the kernel's body in that TMA form is split between a
// producer warpgroup and the kernel's own warpgroups (src/tile/warp_specialize.h splits the kernel):
//
//   with Warpgroups(0, 1, registers=40):              with Warpgroups(1, 1 + T / 128, registers=R):
//       for k in range(n):                                <fragments, fills: the prefix's own>
//           BarrierWait(empty[k % S], (k / S + 1) % 2)    for k in range(n):
//           BarrierArrive(full[k % S], tx=<bytes>)            BarrierWait(full[k % S], parity=k / S % 2)
//           CopyTma(sa[k % S], a[..k..], full[k % S])         <body on stage k % S>
//                                                             BarrierArrive(empty[k % S])
//                                                         <the rest of the kernel>
//
// as examples/gemm_f16_wgmma_ws.tile does by hand; an asynchronous Gemm releases the previous step's stage
// after its DotAsyncWait(1) instead. The kernel's block grows by the producer's 128 threads.
//
// Two to eight wgmma Gemms whose a is a fragment the body computes (wgmma's register-A form) and whose b is
// a buffered tile, into one accumulator, run asynchronously within the step, in any of the forms above:
//
//       <group 0's weights into wf0>                 (a Parallel loop)
//       DotAsync(wf0, sa0[k % S], acc)
//       <group 1's weights into wf1>                 (while group 0's product runs)
//       DotAsync(wf1, sa1[k % S], acc)
//       DotAsyncWait(0)                              (the step ends with nothing in flight: the RS form's
//       rule)
//
// with a DotAsyncWait(n) before any statement that writes a fragment whose product may still run, as
// examples/tile/dequant_gemm_rs_groups.tile is lowered. Only where everything from the first such Gemm to
// the step's end lowers to straight-line code (Parallel loops into fragments over fragments and shared
// tiles, Fills of fragments): the code generator keeps a register-A product in flight across nothing else.
#pragma once

#include <optional>

#include "tilevm/ir/program.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/target/target.h"

namespace tilevm::tile {

// @pre infer_layouts ran (every shared tile has its layout).
// nullopt after reporting when a loop's buffers would not fit in a block's shared memory (the message gives
// the stages, each tile's bytes and the limit).
std::optional<ir::Program> pipeline_loops(ir::Program program, Diagnostics& diags,
                                          const target::Target& target);

}  // namespace tilevm::tile
