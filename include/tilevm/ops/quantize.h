// Weight preparation on the host: quantize a row-major f32 weight matrix W[K, N] (K the reduction axis, N the
// output columns) to codes of a low-bit weight type plus one scale per group of G consecutive rows of each
// column, the format the quantized matmul kernels read. dequantize() is the reference inverse, in double.
//
// Layout
//   codes   packed bit stream (packing.h) of the K*N codes of spec.wtype, row-major: element (k, n) is
//           element k*N + n of the stream.
//   scales  [K/G, N] row-major codes of spec.scale_type (f16 or bf16); group g of column n covers rows
//           g*G .. g*G+G-1.
//   zeros   [K/G, N] like scales, the zero point as a scale_type value (an integer in [0, 2^b-1], exact in
//           f16 and bf16); only with spec.zero_point.
//   value   w(k, n) ~= (decode(wtype, code) - zero) * decode(scale_type, scale), zero = 0 without zero
//   points.
//
// How each group's scale s is chosen (all rounding is round to nearest, ties to even, via tilevm::encode):
//   signed ints, floats   symmetric: s = round_to_scale_type(max|w| / Q), Q the largest representable
//                         magnitude (decode of the type's max code: 7 for i4, 6 for f4e2m1, 448 for f8e4m3).
//                         i1 (values -1 and 0) has no positive value, so Q = 1 there and positive weights
//                         clamp to 0. code = encode(wtype, w / s), which rounds and saturates.
//   unsigned, no zero     s = round(max(w) / max_value), negatives clamped to 0: without a zero point an
//                         unsigned code cannot hold a negative weight, so they all become code 0.
//   unsigned, zero point  asymmetric: the range [min, max] is first widened to contain 0 (so a zero weight
//                         stays exact and the zero point lands in the code range instead of being clamped
//                         away for an all-positive group), s = round((max - min) / (2^b - 1)),
//                         zero = rne(-min / s) clamped to [0, 2^b - 1], code = clamp(rne(w / s) + zero).
//   f16, bf16             not quantized: code = encode(wtype, w), every scale is 1 (zeros are not allowed).
// Guards: a group that is all zeros gets s = 1 (no division by zero). A scale that rounds to 0 in the scale
// type (tiny weights) becomes the smallest positive subnormal; one beyond the scale type's range becomes its
// largest finite value (the weights then saturate). Because s is rounded, max|w| / s can exceed Q by up to
// half a scale ulp; those few weights saturate by a correspondingly tiny amount rather than the scale being
// bumped, so the scale stays the correctly rounded one.
//
// Errors (tilevm::Error): a weight type other than u1..u8, i1..i8, f<b>e<E>m<M>, f16, bf16; a scale type
// other than f16 or bf16; a zero point on a signed or float type; K or N not positive; a weight count other
// than K*N; a non-finite weight; G not in {32, 64, 128} and not K; K not a multiple of G.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tilevm/type/data_type.h"

namespace tilevm::ops {

struct QuantSpec {
  DataType wtype;
  int64_t group;  // G: 32, 64, 128, or K (one group per column: per-channel scales)
  DataType scale_type = DataType::f16();
  bool zero_point = false;  // unsigned integer weight types only
};

struct QuantizedWeight {
  int64_t k = 0;
  int64_t n = 0;
  QuantSpec spec{DataType::u8(), 0};  // DataType has no default; quantize() always sets this
  std::vector<uint8_t> codes;         // packed bit stream of k*n codes of spec.wtype, row-major [K, N]
  std::vector<uint16_t> scales;       // [K/G, N] codes of spec.scale_type
  std::vector<uint16_t> zeros;        // [K/G, N] codes of spec.scale_type, only when spec.zero_point
};

// Quantizes w, a row-major [K, N] matrix, as described above. Throws tilevm::Error for invalid input.
QuantizedWeight quantize(std::span<const float> w, int64_t k, int64_t n, const QuantSpec& spec);

// The [K, N] row-major values the codes stand for: (code_value - zero) * scale, in double from the stored
// scale (and zero) values.
std::vector<double> dequantize(const QuantizedWeight& q);

}  // namespace tilevm::ops
