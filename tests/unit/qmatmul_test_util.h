// One way to write a quantized-matmul problem in the tests (ops::QMatmulProblem with the fields they vary).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/ops/quantize.h"
#include "tilevm/type/convert.h"

namespace tilevm::ops {

inline QMatmulProblem make_problem(int64_t m, int64_t n, int64_t k, DataType wtype = DataType::uint(4),
                                   int64_t group = 128, DataType atype = DataType::f16(),
                                   bool zero_point = false) {
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

// Seeded random inputs of a problem: A uniform in [-1, 1] as ATYPE codes, and a uniform random f32 weight
// quantized with the problem's type, group and zero points (ops::quantize).
struct QMatmulCase {
  std::vector<uint16_t> a;
  QuantizedWeight weight;
};

inline QMatmulCase make_case(const QMatmulProblem& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(p.k * p.n));
  for (float& v : w) v = unit(rng);
  QMatmulCase c{{}, quantize(w, p.k, p.n, QuantSpec{p.wtype, p.group, p.atype, p.zero_point})};
  c.a.resize(static_cast<size_t>(p.m * p.k));
  for (uint16_t& v : c.a) v = static_cast<uint16_t>(encode(p.atype, unit(rng)));
  return c;
}

}  // namespace tilevm::ops
