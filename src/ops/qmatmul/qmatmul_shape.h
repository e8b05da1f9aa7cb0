// Sizes derived from a quantized-matmul problem and configuration, shared by the validation
// (qmatmul_config.cpp) and the program builders (qmatmul.cpp), so that both count the same way.
#pragma once

#include <cstdint>

#include "tilevm/ops/qmatmul/qmatmul.h"

namespace tilevm::ops {

// Register A (QMatmulConfig::register_a): the columns of k in each group that a step converts and multiplies
// on its own, the next group converting while the product of the one before runs; the step's last product
// runs alone. 64 (a 128-byte swizzled activation tile), or 32 (64-byte) for 128 rows or more over
// two warpgroups, where the products are long enough for a quarter instead of half a step's products to run
// alone to pay (and a thread's codes of 32 columns are whole words: even widths). Measured on the H200
// (docs/performance.md, thirteenth session): 32 against 64 took 0.96-0.97 of the time at M = 128 with two
// warpgroups, 1.05-1.07 at M = 32, 1.00 at M = 64, and 1.08-1.16 at M = 128 with one warpgroup.
inline int64_t qmatmul_rs_group_k(const QMatmulConfig& c, int64_t weight_bits) {
  return c.block_m >= 128 && c.warps_n == 8 && weight_bits % 2 == 0 ? 32 : 64;
}

// A register-A tile's codes, group-major: group h's codes are wc words a thread, thread t's at word
// (h T + t) wc of the tile, which the TMA copies as rows of 32 wc words (one warp's words of a group a row:
// thread t of group h at row h T / 32 + t / 32, column (t % 32) wc). valid is false where a thread's codes of
// a group are no whole words (odd widths in groups of 32, which qmatmul_rs_group_k avoids) or more than 8
// (16-bit weights in groups of 64: a row would pass the TMA's 256-element box).
struct RegisterAGroups {
  RegisterAGroups() = default;
  RegisterAGroups(const QMatmulConfig& config, int64_t weight_bits, int64_t words_per_thread);
  int64_t group_k = 0, groups = 0, wc = 0;
  bool valid = false;
};

struct QMatmulShape {
  QMatmulShape(const QMatmulProblem& problem, const QMatmulConfig& config);
  bool per_channel = false;        // G == k: one scale per column, applied once at the end
  int64_t bits = 0;                // of the weight type
  int64_t tm = 0, tn = 0, tk = 0;  // mma tiles per warp: m16 along M, n8 along N, k16 per slice
  int64_t bits_per_thread = 0;     // one slice's codes held by one thread
  int64_t words_per_thread = 0;    // the same in 32-bit words (must be whole)
  int64_t slice_words = 0;         // u32 words of one [slice_k, block_n] slice of transformed codes
  int64_t tile_words = 0;          // u32 words of one [block_k, block_n] tile
  RegisterAGroups register_a;      // with QMatmulConfig::register_a (else empty)
  int64_t code_row_words = 0;      // warp-specialized: the TMA copies a tile's codes as rows of this many
  int64_t k_tiles = 0, n_tiles = 0;
  int64_t scale_rows = 0;          // rows of scales (and zeros) per pipeline stage; 0 per channel
  int64_t weight_stage_bytes = 0;  // one stage's codes and scale (and zero) rows: what _tma's barrier counts
  int64_t stage_bytes = 0;         // one stage: the A tile and the above
  int64_t shared_bytes = 0;
};

}  // namespace tilevm::ops
