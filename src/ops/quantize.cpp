#include "tilevm/ops/quantize.h"

#include <algorithm>
#include <cmath>

#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::ops {

namespace {

bool is_passthrough(DataType t) {
  return t == DataType::f16() || t == DataType::bf16();
}

void validate(std::span<const float> w, int64_t k, int64_t n, const QuantSpec& spec) {
  const DataType t = spec.wtype;
  if (t.is_bool() || (t.bits() > 8 && !is_passthrough(t))) {
    fail(
        "cannot quantize weights to {}: the weight type must be an integer or float of at most 8 bits, or "
        "f16 "
        "or bf16",
        t.name());
  }
  if (!is_passthrough(spec.scale_type))
    fail("the scale type must be f16 or bf16, got {}", spec.scale_type.name());
  if (spec.zero_point && t.kind() != TypeKind::UnsignedInt) {
    fail("zero points need an unsigned integer weight type, got {}", t.name());
  }
  if (k <= 0 || n <= 0) fail("K and N must be positive, got K={} N={}", k, n);
  if (static_cast<int64_t>(w.size()) != k * n) {
    fail("the weights hold {} values, expected K*N = {}*{} = {}", w.size(), k, n, k * n);
  }
  const int64_t g = spec.group;
  if (g != 32 && g != 64 && g != 128 && g != k) fail("group size {} is not 32, 64, 128 or K={}", g, k);
  if (k % g != 0) fail("K={} is not a multiple of the group size {}", k, g);
  for (size_t i = 0; i < w.size(); ++i) {
    if (!std::isfinite(w[i])) {
      fail("weight ({}, {}) is not finite: {}", static_cast<int64_t>(i) / n, static_cast<int64_t>(i) % n,
           format_value(w[i]));
    }
  }
}

// The largest magnitude the symmetric scheme maps max|w| onto (see the header for i1).
double symmetric_range(DataType t) {
  const double top = t.max_value();
  return top > 0 ? top : -t.min_value();
}

// The ideal scale rounded to the scale type, with the guards of the header: a positive ideal scale never
// becomes 0 and never becomes infinity (encode already saturates finite values, the check keeps that an
// invariant).
uint64_t round_scale(DataType scale_type, double ideal) {
  if (ideal == 0) return encode(scale_type, 1.0);
  uint64_t code = encode(scale_type, ideal);
  if (decode(scale_type, code) == 0) code = 1;  // the smallest positive subnormal
  if (is_inf_code(scale_type, code)) code = scale_type.max_code();
  return code;
}

// Round half to even on a double, independent of the current rounding mode.
double rne(double x) {
  const double floor = std::floor(x);
  const double diff = x - floor;
  if (diff < 0.5) return floor;
  if (diff > 0.5) return floor + 1;
  return std::fmod(floor, 2.0) == 0 ? floor : floor + 1;
}

}  // namespace

QuantizedWeight quantize(std::span<const float> w, int64_t k, int64_t n, const QuantSpec& spec) {
  validate(w, k, n, spec);
  const DataType t = spec.wtype;
  const DataType st = spec.scale_type;
  const int64_t groups = k / spec.group;

  QuantizedWeight q;
  q.k = k;
  q.n = n;
  q.spec = spec;
  q.scales.assign(static_cast<size_t>(groups * n), 0);
  if (spec.zero_point) q.zeros.assign(static_cast<size_t>(groups * n), 0);
  std::vector<uint64_t> codes(static_cast<size_t>(k * n), 0);

  for (int64_t g = 0; g < groups; ++g) {
    const int64_t row0 = g * spec.group;
    for (int64_t col = 0; col < n; ++col) {
      const size_t gi = static_cast<size_t>(g * n + col);
      auto weight = [&](int64_t r) {
        return static_cast<double>(w[static_cast<size_t>((row0 + r) * n + col)]);
      };
      auto set = [&](int64_t r, uint64_t code) { codes[static_cast<size_t>((row0 + r) * n + col)] = code; };

      if (is_passthrough(t)) {
        q.scales[gi] = static_cast<uint16_t>(encode(st, 1.0));
        for (int64_t r = 0; r < spec.group; ++r) set(r, encode(t, weight(r)));
        continue;
      }

      // The range is widened to contain 0 in every scheme: the symmetric one needs max|w| >= 0 anyway, and
      // the asymmetric one needs it to keep the zero point inside the code range (see the header).
      double lo = 0, hi = 0;
      for (int64_t r = 0; r < spec.group; ++r) {
        lo = std::min(lo, weight(r));
        hi = std::max(hi, weight(r));
      }

      if (spec.zero_point) {
        const double levels = static_cast<double>(t.int_max());  // 2^b - 1
        const uint64_t scode = round_scale(st, (hi - lo) / levels);
        const double s = decode(st, scode);
        const double zero = std::clamp(rne(-lo / s), 0.0, levels);
        q.scales[gi] = static_cast<uint16_t>(scode);
        q.zeros[gi] = static_cast<uint16_t>(encode(st, zero));  // exact: an integer <= 255
        for (int64_t r = 0; r < spec.group; ++r) {
          set(r, static_cast<uint64_t>(std::clamp(rne(weight(r) / s) + zero, 0.0, levels)));
        }
        continue;
      }

      // Unsigned without a zero point only looks at the positive side (negatives clamp to code 0).
      const double magnitude = t.kind() == TypeKind::UnsignedInt ? hi : std::max(-lo, hi);
      const uint64_t scode = round_scale(st, magnitude / symmetric_range(t));
      const double s = decode(st, scode);
      q.scales[gi] = static_cast<uint16_t>(scode);
      for (int64_t r = 0; r < spec.group; ++r) set(r, encode(t, weight(r) / s));
    }
  }
  q.codes = pack(t, codes);
  return q;
}

std::vector<double> dequantize(const QuantizedWeight& q) {
  const QuantSpec& spec = q.spec;
  TILEVM_ASSERT(q.k > 0 && q.n > 0 && spec.group > 0 && q.k % spec.group == 0, "malformed quantized weight");
  const int64_t groups = q.k / spec.group;
  TILEVM_ASSERT(static_cast<int64_t>(q.scales.size()) == groups * q.n, "{} scales, expected {}",
                q.scales.size(), groups * q.n);
  TILEVM_ASSERT(!spec.zero_point || q.zeros.size() == q.scales.size(), "{} zero points, expected {}",
                q.zeros.size(), q.scales.size());
  const std::vector<uint64_t> codes = unpack(spec.wtype, q.codes, q.k * q.n);

  std::vector<double> out(codes.size());
  for (int64_t row = 0; row < q.k; ++row) {
    for (int64_t col = 0; col < q.n; ++col) {
      const size_t gi = static_cast<size_t>((row / spec.group) * q.n + col);
      const size_t i = static_cast<size_t>(row * q.n + col);
      const double scale = decode(spec.scale_type, q.scales[gi]);
      const double zero = spec.zero_point ? decode(spec.scale_type, q.zeros[gi]) : 0.0;
      out[i] = (decode(spec.wtype, codes[i]) - zero) * scale;
    }
  }
  return out;
}

}  // namespace tilevm::ops
