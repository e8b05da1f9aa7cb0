// Inputs and the reference check for the GEMM programs (C[M, N] = A[M, K] @ B[N, K]^T in f16): random f16
// operands in [-1, 1), C poisoned with NaN so that an element never written shows, and the comparison of a
// result with the product in doubles. One piece for the template's GPU check (gemm.cpp) and the tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilevm/interp/interpreter.h"

namespace tilevm::ops {

struct GemmData {
  int64_t m = 0, n = 0, k = 0;
  std::vector<uint8_t> a, b, c;  // f16 codes, row-major [M, K], [N, K], [M, N]
  // a_ptr, b_ptr, c_ptr bound to this data's buffers (a run writes c in place), M, N, K to its sizes.
  interp::Arguments args();
};

GemmData random_gemm_data(int64_t m, int64_t n, int64_t k, uint32_t seed);

// The first element of `c` (data's M x N, f16) farther from the double product of data's a and b than
// rel * |product| + abs, described with its indices; "" when every element is within.
std::string gemm_mismatch(const GemmData& data, const std::vector<uint8_t>& c, double rel, double abs);

}  // namespace tilevm::ops
