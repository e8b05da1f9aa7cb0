// Reading orders for the reordering converters (ConverterSpec::order), shared by the CPU and GPU tests.
#pragma once

#include <vector>

#include "tilevm/type/data_type.h"

namespace tilevm::codegen::cuda::testing {

// The weight transform's order for b-bit codes (b divides 16): pair p of input word w (P = 16/b pairs per
// word) reads the codes at bits p*b and 16 + p*b of w, i.e. output element 2(wP + p) + h is source code
// 2wP + hP + p. count is a multiple of 32/b.
inline std::vector<int> interleaved_order(DataType from, int count) {
  const int pairs_per_word = 16 / from.bits();
  std::vector<int> order(static_cast<size_t>(count));
  for (int w = 0; w < count / (2 * pairs_per_word); ++w) {
    for (int p = 0; p < pairs_per_word; ++p) {
      for (int h = 0; h < 2; ++h)
        order[static_cast<size_t>(2 * (w * pairs_per_word + p) + h)] =
            w * 2 * pairs_per_word + h * pairs_per_word + p;
    }
  }
  return order;
}

// count - 1 .. 0: every pair's codes in the wrong order, and across words.
inline std::vector<int> reversed_order(int count) {
  std::vector<int> order(static_cast<size_t>(count));
  for (int k = 0; k < count; ++k) order[static_cast<size_t>(k)] = count - 1 - k;
  return order;
}

}  // namespace tilevm::codegen::cuda::testing
