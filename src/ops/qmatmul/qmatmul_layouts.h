// The register and shared layouts of the quantized-matmul programs (qmatmul.h), shared by the transform and
// every form of the matmul (qmatmul_stages.h).
#pragma once

#include <cstdint>
#include <optional>

#include "qmatmul_shape.h"
#include "tilevm/ir/builder.h"
#include "tilevm/layout/layout.h"
#include "tilevm/ops/qmatmul/qmatmul.h"

namespace tilevm::ops {

// The register layouts of one step of the loop: one Dot slice per group of warps along K. Warps are numbered
// (wk * WM + wm) * WN + wn (spatial(WK, WM, WN)): A is replicated over the warps of one row (wn), B over the
// warps of one column (wm). With WK == 1 the tiles are 2-D; with WK > 1 the Dot operands and the accumulator
// carry a leading batch dimension of WK, spread over the groups of warps (a batched Dot).
//
// With swapped operands (QMatmulConfig::swapped) the Dot is C^T[BN, 8] = W^T[BN, SK] @ A^T[SK, 8]: the
// codes are mma's A operand (warps along N) and the activations its B operand (every warp the same). Each
// is read through the transpose of its fragment layout (the same registers; only the names of the elements
// swap), so the transform reads the codes from [K, N], the activations come from the [8, BK] shared tile,
// and the [BN, 8] result is the [8, BN] accumulator: a View relabels them, no data moves.
struct SliceLayouts {
  layout::Layout a_load;  // [BM, WK * SK]  A as read from shared memory: group wk holds columns wk*SK ..
  layout::Layout a;  // [BM, SK] or [WK, BM, SK]: the same registers as a_load, for the Dot ([SK, 8] swapped)
  layout::Layout b;  // [SK, BN] or [WK, SK, BN]: the codes, in the mma B fragment order ([BN, SK] swapped)
  layout::Layout b_read;  // [SK, BN]: the codes as the transform reads them from [K, N] (b, or b transposed)
  layout::Layout bt;      // [WK * slice words]  the same bits as u32 words, in 16-byte chunks per thread
                          // (register A: group-major, a thread's wc words of each group; RegisterAGroups)
  layout::Layout c;       // [BM, BN] or [WK, BM, BN]: the accumulator
  layout::Layout dot_c;   // the Dot's C: c, or swapped [BN, 8] (the same registers as c)
};

SliceLayouts slice_layouts(const QMatmulConfig& c, const QMatmulShape& s, int64_t warps_m, int64_t warps_k);

// 1-, 2- and 4-bit codes are stored so that the two codes of each f16/bf16 pair of the mma B fragment sit
// 16 bits apart in one 32-bit word: one lop3 (and, for some pairs, a shift shared by the word) then places
// both codes in their halves' mantissas (converters.h), instead of a prmt per pair. Layouts express this
// with K split into (K/2, 2), the pair index last: `mma` is layout_b with that split (the same slots), and
// `stored` holds the same elements with the pair index moved outwards to stride 16 / b slots, so that a
// word's low half holds the first codes of 16 / b pairs and its high half their second codes. The matmul
// reads `stored` (a View of the loaded words) and casts it into `mma` (Cast with layout=); the transform
// does the reverse with a Cast that only reorders.
struct PairLayouts {
  layout::Layout mma;     // [SK/2, BN, 2] or [WK, SK/2, BN, 2]; swapped [BN, SK/2, 2]
  layout::Layout stored;  // the same elements per thread, the pair index at slot stride 16 / b
};

// nullopt where the codes are not stored in pairs (other widths, or weights that do not fit ATYPE).
std::optional<PairLayouts> pair_layouts(const QMatmulProblem& p, const QMatmulConfig& c,
                                        const QMatmulShape& s, int64_t warps_m, int64_t warps_k);
// The pair layouts under the names the programs print them by.
std::optional<PairLayouts> named_pair_layouts(ir::ProgramBuilder& pb, std::optional<PairLayouts> pairs);

// [1, BN]: a row of per-column values (scales, zeros) held by every thread for each column it holds in
// `l` (the elementwise broadcast rule): `l` with dimension 0 reduced away and put back with extent 1.
layout::Layout column_row(const layout::Layout& l);

// The A tile in shared memory: [STAGES, BM, BK] f16 in 16-byte chunks, swizzled (chunk index xor row) when
// the chunk count allows it, so that the cp.async writes and the ldmatrix reads avoid bank conflicts.
// The wgmma forms: [STAGES, BM, BK] in 128-byte swizzled column groups of 64; warp-specialized [STAGES,
// BK / 64, BM, 64], the column groups as tiles of their own; with register A in groups of
// qmatmul_rs_group_k(c, weight_bits) columns (64-byte swizzled for 32).
layout::Layout shared_a_layout(const QMatmulConfig& c, int64_t weight_bits);

}  // namespace tilevm::ops
