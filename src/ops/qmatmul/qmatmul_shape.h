// Sizes derived from a quantized-matmul problem and configuration, shared by the validation
// (qmatmul_config.cpp) and the program builders (qmatmul.cpp), so that both count the same way.
#pragma once

#include <cstdint>

#include "tilevm/ops/qmatmul/qmatmul.h"

namespace tilevm::ops {

struct QMatmulShape {
  QMatmulShape(const QMatmulProblem& problem, const QMatmulConfig& config);
  bool per_channel = false;        // G == k: one scale per column, applied once at the end
  int64_t bits = 0;                // of the weight type
  int64_t tm = 0, tn = 0, tk = 0;  // mma tiles per warp: m16 along M, n8 along N, k16 per slice
  int64_t bits_per_thread = 0;     // one slice's codes held by one thread
  int64_t words_per_thread = 0;    // the same in 32-bit words (must be whole)
  int64_t slice_words = 0;         // u32 words of one [slice_k, block_n] slice of transformed codes
  int64_t tile_words = 0;          // u32 words of one [block_k, block_n] tile
  int64_t k_tiles = 0, n_tiles = 0;
  int64_t scale_rows = 0;   // rows of scales (and zeros) per pipeline stage; 0 per channel
  int64_t stage_bytes = 0;  // one stage: the A tile, the codes, the scale (and zero) rows
  int64_t shared_bytes = 0;
};

}  // namespace tilevm::ops
