// The layouts the tile layer chooses (docs/language.md, "The tile layer"): what layout inference writes into
// the fragments and shared tiles a program leaves open, and what the lowering loads Gemm operands and moves
// copies with. Each is a closed formula of the tile's shape, dtype and thread count, so a program reads the
// same layouts in every pass that needs them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tilevm/layout/layout.h"
#include "tilevm/target/target.h"
#include "tilevm/type/data_type.h"

namespace tilevm::tile {

// How a Gemm spreads the block's warps over its [M, N] accumulator: wm warps down M, wn across N.
struct WarpPartition {
  int64_t wm = 1, wn = 1;
  bool operator==(const WarpPartition&) const = default;
};

// The partition of `warps` warps over [m, n] on mma.m16n8k16 atoms that loads the fewest operand rows per
// warp (m / wm + n / wn; ties to more warps down M), or nullopt with the reason in `why` when no partition
// tiles the shape (m a multiple of 16 wm, n of 8 wn).
std::optional<WarpPartition> gemm_warp_partition(int64_t m, int64_t n, int64_t warps, std::string* why);

// The Gemm's register layouts for partition w, all over mma.m16n8k16's fragments (target/atoms.h):
//   c [M, N]  spatial(wm, wn).local(M / 16 wm, N / 8 wn).<C atom>
//   a [M, K]  warps down M, replicated across N: reduce(spatial(wm, 1, wn), dims=[2]).local(M / 16 wm, K /
//   16).<A atom> b [K, N]  warps across N, replicated down M: reduce(spatial(wm, 1, wn), dims=[0]).local(K /
//   16, N / 8 wn).<B atom>
layout::Layout gemm_c_layout(int64_t m, int64_t n, WarpPartition w);
layout::Layout gemm_a_layout(int64_t m, int64_t k, WarpPartition w);
layout::Layout gemm_b_layout(int64_t k, int64_t n, WarpPartition w);

// Whether a Gemm runs on Hopper's wgmma (one synchronous Dot) rather than on mma.sync (a loop of LoadShared
// + Dot on register fragments): the target has wgmma, the block is whole warpgroups, b [N, K]
// (transpose_b) is a shared tile whose layout the tile layer chooses (shared_tile_layout: rows of 32, 64 or
// 128 bytes are exactly wgmma's swizzled forms), a [M, K] is such a shared tile too or a register fragment
// whose layout is not yet decided (wgmma's RS form: gemm_wgmma_a_layout), f16 or bf16 into f32 (or f16 for
// f16), M a multiple of 64 per warpgroup, N a multiple of 8 up to 256. infer_layouts records the choice in
// the Gemm (`wgmma=`), where the later passes read it. (a_open: a shared tile of the tile layer's choice, or
// a fragment of no layout yet.)
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  DataType ab = DataType::f16(), c = DataType::f32();
  bool a_shared = false, b_shared = false, a_open = false, b_open = false;
  bool transpose_a = false, transpose_b = false;
};
bool gemm_uses_wgmma(const GemmShape& g, int64_t threads, const target::Target& target);
// wgmma's register operand a [M, K] over threads / 128 warpgroups, each holding the rows of its accumulator
// (gemm_wgmma_c_layout): spatial(W, 1).local(M / 64 W, K / 16).<wgmma A fragment> (target/wgmma.h).
layout::Layout gemm_wgmma_a_layout(int64_t m, int64_t k, int64_t threads);
// The wgmma accumulator [M, N] over threads / 128 warpgroups, each taking M / warpgroups rows:
// spatial(W, 1).local(M / 64 W, 1).<wgmma m64nNk16 accumulator> (target/wgmma.h). @pre M a multiple of 64 W,
// N of 8 up to 256.
layout::Layout gemm_wgmma_c_layout(int64_t m, int64_t n, int64_t threads);

// A shared tile [R, C] in rows of 16-byte chunks whose chunk index is XORed with the row, so that the 8
// rows an ldmatrix (or a column of 16-byte stores) touches fall in 8 different bank groups: chunk c of row i
// at c ^ ((i >> s) % n), n the chunks of a row and s such that 2^s rows share 128 bytes. Row-major
// local(R, C) where the rows are not a power-of-two number (>= 2) of chunks. A tile of higher rank (a
// pipeline's stages in front) holds one such [R, C] tile per leading index; rank 1 is row-major.
layout::Layout shared_tile_layout(const layout::Index& shape, DataType dtype);
// Whether the TMA copies a rank-2 shared tile of this shape and layout in one box (the verifier's rules for
// CopyTma and StoreTma): elements of 8 to 64 bits, row-major or a swizzled form (target::tma_swizzle_bytes),
// at most 256 per dimension, rows of a multiple of 16 bytes. `swizzled`: also the layout shared_tile_layout
// gives the tile, with rows of 32, 64 or 128 bytes (what the pipelines' TMA fills for ldmatrix and wgmma).
bool tma_tile(const layout::Index& shape, DataType dtype, const layout::Layout& layout, bool swizzled);

// A coalesced register layout for moving a tile between memories: each thread holds 16-byte runs of a row
// (shorter when the row is), consecutive threads take consecutive runs, the rest repeats; threads beyond
// the tile's runs replicate. Rank 1 or 2. nullopt with the reason in `why` when `threads` cannot be spread
// over the shape that way.
std::optional<layout::Layout> copy_layout(const layout::Index& shape, DataType dtype, int64_t threads,
                                          std::string* why);

}  // namespace tilevm::tile
