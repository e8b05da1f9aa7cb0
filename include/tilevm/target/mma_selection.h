// Which mma.sync atom computes a Dot, and in which order: the one rule that the verifier (is this Dot valid
// on tensor cores?) and the CUDA emitter (which instruction, which registers) both follow.
//
// A Dot d = a @ b + c runs on tensor cores when its three register layouts divide the fragments of one atom
// of atoms.h that has their operand types. The quotients Qa [.., M/16, K/k], Qb [.., K/k, N/8] and
// Qc [.., M/16, N/8] are layouts over warps (thread w of a quotient is warp w) whose elements are whole
// atoms: Qc says which result atoms each warp computes, Qa and Qb which operand atoms it holds and in which
// slot. Two conditions, checked in one walk over (k step, result slot, warp):
//
//   held          every warp holds the a atom (m, k) and the b atom (k, n) for every result atom (m, n) it
//                 computes and every k. Without it there is no selection (the Dot is SIMT).
//   warp-uniform  those a and b atoms sit in the same slots in every warp, so that the emitted code names
//                 registers by constants. A held but non-uniform selection is still valid; the emitter
//                 then computes the Dot the SIMT way through shared memory.
//
// Example: a, b, c are the m16n8k16 f16 fragments themselves (one warp, Qa = Qb = Qc = one atom): held and
// uniform, one step {0, 0, 0}. The same a replicated over 2 warps that split M (Qc = spatial(2, 1)) puts
// warp 0's a atom in slot 0 and warp 1's in slot 1: held, not uniform.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "tilevm/layout/layout.h"
#include "tilevm/target/atoms.h"
#include "tilevm/type/data_type.h"

namespace tilevm::target {

struct MmaSelection {
  const MmaAtom* atom = nullptr;
  layout::Layout qa, qb, qc;  // the operands' layouts divided by the atom's fragments
  bool warp_uniform = false;
  // With warp_uniform: (c slot, a slot, b slot) of Qc, Qa, Qb for each k step (outer) and each result slot
  // (inner), the same in every warp. k outside means consecutive mma write different accumulators and do
  // not wait for one another; each accumulator still sums its k steps in ascending order.
  std::vector<std::array<int64_t, 3>> steps;
};

// The selection for a Dot with operand types a, b, c and register layouts la [.., M, K], lb [.., K, N],
// lc [.., M, N] (equal ranks, at least 2, equal thread counts: the verifier's shape checks). nullopt when no
// atom has these types, a layout does not divide the atom's fragment, or some warp does not hold what it
// needs. Among several candidate atoms the first held and warp-uniform one wins, else the first held one.
//
// MmaDetail::HeldOnly answers only whether some atom is held (the verifier's question), decided on the
// quotients' modes (layout/holds.h) so that the cost does not grow with the tile: the selection then has
// warp_uniform false and no steps. The emitter asks for the steps, a walk as long as the code it emits.
enum class MmaDetail { Steps, HeldOnly };
std::optional<MmaSelection> select_mma(DataType a, DataType b, DataType c, const layout::Layout& la,
                                       const layout::Layout& lb, const layout::Layout& lc,
                                       MmaDetail detail = MmaDetail::Steps);

}  // namespace tilevm::target
