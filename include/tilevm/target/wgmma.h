// Hopper's warpgroup MMA (wgmma.mma_async, sm_90a) as data: which accumulator layouts and which shared
// operand layouts it takes. The one rule that the verifier (is this DotAsync valid?) and the CUDA emitter
// (which instruction, which descriptors) both follow, as select_mma is for mma.sync.
//
// One wgmma.m64nNk16 is issued by a warpgroup (128 threads, 4 warps) and computes a [64, N] block of the
// result from a [64, 16] block of A and a [16, N] block of B (f16 or bf16 in, f32 or f16 accumulated).
//
//   accumulator [64, N], 128 threads:  spatial(4, 1).local(1, N / 8).local(2, 1).spatial(8, 4).local(1, 2)
//   (warp w holds rows 16w..16w+15; slot i of a thread is the PTX fragment's d[i])
//
// A (here from shared memory) and B come from shared memory through a 64-bit matrix descriptor: a start
// address and two strides over "core matrices" of 8 rows of 16 bytes. tilevm supports the K-major forms:
// the operand tile [rows, K] (A: [M, K]; B given transposed, [N, K]) stored with K contiguous, in 8-row
// groups, either as core matrices side by side (no swizzle) or as rows of S = 32, 64 or 128 bytes whose
// 16-byte chunks are permuted by the row (the swizzle the TMA writes: chunk c of row r lands at chunk
// c ^ f(r), f(r) = r % 8 for 128, (r / 2) % 4 for 64, (r / 4) % 2 for 32). In the layout algebra
// (shared layouts are T = 1 layouts, offset -> index), one 8-row group of 128-byte f16 rows is
//
//   swizzle(local(8, 8), dim=1).local(1, 8)        (8 rows x 8 chunks of 8 f16)
//
// and an operand tile is any arrangement of such groups with a constant stride between groups of rows
// (the descriptor's SBO) and between groups along K (advanced through the start address).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tilevm/layout/layout.h"
#include "tilevm/type/data_type.h"

namespace tilevm::target {

// The accumulator atom of wgmma.m64nNk16: [64, n] over 128 threads (n a multiple of 8, 8 to 256).
layout::Layout wgmma_accumulator(int64_t n);

// How a Dot's accumulator splits into wgmma instructions: the instruction's N and the quotient of c's
// layout by the atom ([M / 64, N_tile / n] over T / 128 warpgroups: which 64 x n blocks each warpgroup
// computes, in which of its slots).
struct WgmmaTiling {
  int64_t n = 0;
  layout::Layout quotient;
};

// The tiling for operand types (ab, c) and the accumulator layout `c_layout` (rank 2): the largest n that
// divides it. nullopt, with the reason in *why, when the types have no wgmma or no n divides the layout.
std::optional<WgmmaTiling> wgmma_tiling(DataType ab, DataType c, const layout::Layout& c_layout,
                                        std::string* why);

// A K-major shared operand as the matrix descriptor describes it.
struct WgmmaSharedForm {
  int swizzle_bytes = 0;      // 0 (core matrices, no swizzle), 32, 64 or 128
  int64_t lbo_bytes = 0;      // no swizzle: between core matrices adjacent in K; swizzled: unused (16)
  int64_t sbo_bytes = 0;      // between 8-row groups
  int64_t k_group_bytes = 0;  // between groups of one swizzle row (or core matrix) along K
  // The alignment the tile's origin needs: 8 rows of the swizzle (1024 bytes for 128), 16 without.
  int64_t align_bytes() const { return swizzle_bytes ? 8 * swizzle_bytes : 16; }
};

// The element offset (relative to the tile's origin) of element (r, k) of an operand tile [rows, K].
using TileOffset = std::function<int64_t(int64_t r, int64_t k)>;

// The A operand from registers (wgmma's RS form, f16 or bf16): [64, 16] over the warpgroup's 128 threads,
// warp w holding rows 16w..16w+15 in mma.m16n8k16's A fragment order (slot i of a thread is the PTX
// fragment's a_i):  spatial(4, 1).column_local(2, 2).spatial(8, 4).local(1, 2)
layout::Layout wgmma_register_a();

// How a register a [M, K] feeds the accumulator's tiling: for each slot s of the accumulator's quotient
// (the 64 x n block it names, row block mi) and k step kk, the slot of a's quotient by wgmma_register_a()
// that holds a's block (mi, kk) in the same warpgroup, the same in every warpgroup (the emitter indexes
// registers by it): slots[s * (K / 16) + kk]. nullopt, with the reason in *why, when a is no arrangement of
// the atom or a warpgroup lacks a block its accumulator needs.
std::optional<std::vector<int64_t>> wgmma_register_a_slots(const layout::Layout& a, const WgmmaTiling& c,
                                                           std::string* why);

// The K-major form of a tile of `rows` x `k` elements of `elem_bits` bits whose storage is `offset`:
// tried with 128-, 64-, 32-byte swizzles and without, checked element by element. nullopt, with the
// reason in *why, when none describes it. rows must be a multiple of 8 and k of 16 bytes' elements.
std::optional<WgmmaSharedForm> wgmma_k_major_form(const TileOffset& offset, int64_t rows, int64_t k,
                                                  int elem_bits, std::string* why);

// The form of a shared tensor whose last two dimensions [rows, K] are the operand tile, its leading
// dimensions selecting one tile (a pipeline's stages): every tile stored alike, in a K-major form, at an
// origin aligned for it (relative to the tensor's start, which the planner aligns to 1024 bytes when the
// layout is swizzled). nullopt, with the reason in *why, otherwise.
std::optional<WgmmaSharedForm> wgmma_operand_form(const layout::Layout& storage, int elem_bits,
                                                  std::string* why);

// The byte offset of element (r, k) of a tile in `form` from the tile's origin, for r a multiple of 8 and
// k a multiple of 16 bytes' elements (where no swizzle moves anything).
int64_t wgmma_block_offset(const WgmmaSharedForm& form, int64_t r, int64_t k, int elem_bits);

// The shared layout that a K-major operand tile [rows, k] of `elem_bits` bits has in the 8-row-group form
// with `swizzle_bytes` (32, 64, 128) per row, groups of rows stacked: what the TMA writes for a box whose
// rows are swizzle_bytes long (k * elem_bits / 8 == swizzle_bytes). Used by examples and tests.
layout::Layout wgmma_swizzled_tile(int64_t rows, int64_t k, int elem_bits, int swizzle_bytes);

}  // namespace tilevm::target
