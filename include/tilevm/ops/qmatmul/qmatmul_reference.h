// The quantized matmul's reference and the comparison every check uses (CLI --check, interpreter and GPU
// tests): C = A @ dequant(B) in double from the very codes, scales, zeros and A values the kernel reads.
//
//   QMatmulReference ref = qmatmul_reference(problem, a, weight);
//   QMatmulCheck check = check_qmatmul(problem, c, ref);
//   if (!check.passed()) std::cerr << check.summary() << "\n";
//   // "5 of 60 outputs mismatch; worst C[2, 17] = 0.5, expected 0.2502 (error 0.2498, tolerance 0.0005)"
//
// Tolerance of one output whose exact value is r, with S = sum_k |a * w| its magnitude sum, u the unit
// roundoff of ATYPE (2^-11 for f16, 2^-8 for bf16) and s ATYPE's smallest subnormal:
//   2u|r| + s            the output is rounded to ATYPE once: against round(r) that is at most one ulp
//                        (the computed sum may sit across a rounding boundary from r), or s near zero
//   + u * S              only where the dequantized weights are rounded to ATYPE before the product: on the
//                        f32 path (weights that do not fit ATYPE) and in the dequant_gemm configuration
//                        (weights_rounded): each weight moves by up to u|w|
//   + (K/8 + 16) 2^-24 S the f32 accumulation: the mma's k16 steps, the per-slice scaling (acc += tile *
//                        scale, two roundings per slice), the split-K partial sums and the reduce, each a
//                        rounding of a partial sum bounded by S, in an order other than the reference's
// A wrong element is far outside: a dropped k-step or a wrong group's scale moves C by O(S / groups), which
// for random data is orders of magnitude above these terms (the tests check that a shifted reference fails).
// A NaN or infinite output (e.g. an element left unwritten in a NaN-poisoned C) mismatches unless the
// reference rounds to the same infinity.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/ops/quantize.h"

namespace tilevm::ops {

struct QMatmulReference {
  int64_t m = 0, n = 0;
  std::vector<double> c;          // [m, n] exact (double) values
  std::vector<double> magnitude;  // [m, n] sum_k |a * w|, for the tolerance
};

// `a` holds m*k ATYPE codes (row-major), `weight` the quantized [k, n] weight of the problem's type and
// group (with scales of ATYPE and zeros iff problem.zero_point). @throws tilevm::Error when they do not
// match the problem.
QMatmulReference qmatmul_reference(const QMatmulProblem& problem, std::span<const uint16_t> a,
                                   const QuantizedWeight& weight);

// The tolerance described above for one output.
double qmatmul_tolerance(const QMatmulProblem& problem, double expected, double magnitude,
                         bool weights_rounded = false);

struct QMatmulCheck {
  int64_t outputs = 0;
  int64_t mismatches = 0;
  // The worst output (largest error relative to its tolerance; the first NaN counts as worst).
  int64_t worst_row = -1, worst_col = -1;
  double worst_value = 0;     // the output, decoded
  double worst_expected = 0;  // the reference rounded to ATYPE
  double worst_error = 0;
  double worst_tolerance = 0;
  bool passed() const { return mismatches == 0; }
  // "all 60 outputs within tolerance; worst C[1, 7] = 0.5, expected 0.5 (error 0, tolerance 0.00132)" or
  // the mismatch line shown in the header comment.
  std::string summary() const;
};

// Compares `c` (m*n ATYPE codes) with the reference. @throws tilevm::Error when the sizes differ.
// weights_rounded: the weights were dequantized to ATYPE before the product (config.dequant_gemm).
QMatmulCheck check_qmatmul(const QMatmulProblem& problem, std::span<const uint16_t> c,
                           const QMatmulReference& ref, bool weights_rounded = false);

}  // namespace tilevm::ops
