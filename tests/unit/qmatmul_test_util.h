// One way to write a quantized-matmul problem in the tests (ops::QMatmulProblem with the fields they vary).
#pragma once

#include <cstdint>

#include "tilevm/ops/qmatmul.h"

namespace tilevm::ops {

inline QMatmulProblem make_problem(int64_t m, int64_t n, int64_t k, DataType wtype = DataType::uint(4),
                                   int64_t group = 128, DataType atype = DataType::f16(), bool zero_point = false) {
  QMatmulProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.wtype = wtype;
  p.group = group;
  p.atype = atype;
  p.zero_point = zero_point;
  return p;
}

}  // namespace tilevm::ops
