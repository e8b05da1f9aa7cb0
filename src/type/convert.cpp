#include "tilevm/type/convert.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "tilevm/support/error.h"

namespace tilevm {

namespace {

uint64_t sign_mask(DataType type) {
  return uint64_t{1} << (type.bits() - 1);
}

// Any float of the generic layout (sign, E, M); f32 and f64 go through the hardware instead.
double decode_float(DataType type, uint64_t code) {
  const int mantissa_bits = type.mantissa_bits();
  const uint64_t exponent_ones = (uint64_t{1} << type.exponent_bits()) - 1;
  const uint64_t exponent = (code >> mantissa_bits) & exponent_ones;
  const uint64_t mantissa = code & ((uint64_t{1} << mantissa_bits) - 1);
  if (is_nan_code(type, code)) return std::numeric_limits<double>::quiet_NaN();
  double magnitude;
  if (is_inf_code(type, code)) {
    magnitude = std::numeric_limits<double>::infinity();
  } else if (exponent == 0) {  // subnormal: 0.m * 2^(1 - bias)
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - type.bias() - mantissa_bits);
  } else {  // normal: 1.m * 2^(exponent - bias)
    const uint64_t significand = (uint64_t{1} << mantissa_bits) | mantissa;
    magnitude = std::ldexp(static_cast<double>(significand),
                           static_cast<int>(exponent) - type.bias() - mantissa_bits);
  }
  return (code & sign_mask(type)) ? -magnitude : magnitude;
}

// Round to nearest, ties to even, of a non-negative double below 2^63 (independent of the FP rounding mode).
uint64_t round_half_even(double q) {
  const double floor = std::floor(q);
  const double fraction = q - floor;  // exact: q and floor share the binade or floor is smaller
  auto n = static_cast<uint64_t>(floor);
  if (fraction > 0.5 || (fraction == 0.5 && (n & 1))) ++n;
  return n;
}

uint64_t encode_float(DataType type, double value) {
  if (std::isnan(value)) return type.has_nan() ? type.nan_code() : type.max_code();
  const uint64_t sign = std::signbit(value) ? sign_mask(type) : 0;
  if (type == DataType::f64()) return std::bit_cast<uint64_t>(value);
  if (type == DataType::f32()) {
    float narrowed = static_cast<float>(value);  // the hardware rounds to nearest even, subnormals included
    if (std::isinf(narrowed) && !std::isinf(value))
      narrowed = std::copysign(std::numeric_limits<float>::max(), narrowed);
    return std::bit_cast<uint32_t>(narrowed);
  }
  const double magnitude = std::fabs(value);
  if (std::isinf(magnitude)) return sign | (type.has_inf() ? type.inf_code(false) : type.max_code());
  // Everything at or above max rounds (or saturates) to max; this also keeps f8e4m3 off its NaN code.
  if (magnitude >= type.max_value()) return sign | type.max_code();
  if (magnitude == 0) return sign;
  // Write magnitude = q * 2^scale where 2^scale is the spacing of the target's codes around magnitude, so
  // that the code is round(q) plus the exponent field. Scaling by a power of two is exact in double.
  const int mantissa_bits = type.mantissa_bits();
  const int min_exponent = 1 - type.bias();  // exponent of the smallest normal
  int frexp_exponent;
  std::frexp(magnitude, &frexp_exponent);
  const int exponent = std::max(frexp_exponent - 1, min_exponent);  // magnitude < 2^(exponent + 1)
  const double q = std::ldexp(magnitude, mantissa_bits - exponent);
  const uint64_t rounded = round_half_even(q);  // in [0, 2^(M+1)]; 2^(M+1) carries into the next binade
  // For a normal number, code = (biased exponent << M) + (significand - 2^M) = ((exponent - min_exponent) <<
  // M)
  // + significand; a subnormal has exponent == min_exponent and code = significand. A carry out of the
  // significand increments the exponent field, which is exactly the next binade's first code.
  return sign | ((static_cast<uint64_t>(exponent - min_exponent) << mantissa_bits) + rounded);
}

uint64_t encode_integer(DataType type, double value) {
  if (std::isnan(value)) return 0;
  const bool is_signed = type.kind() == TypeKind::SignedInt;
  // 2^(bits-1) (signed) or 2^bits (unsigned) is exact in double; values at or beyond it clamp to max.
  const double limit = std::ldexp(1.0, is_signed ? type.bits() - 1 : type.bits());
  const double magnitude = std::fabs(value);
  if (value >= limit) return type.int_max();
  if (value < 0) {
    if (!is_signed) return 0;
    if (magnitude > limit) return static_cast<uint64_t>(type.int_min()) & type.code_mask();
    // -limit itself rounds to -limit, which is int_min; round the magnitude so ties go to even symmetrically.
    const uint64_t rounded =
        magnitude >= 0x1p62 ? static_cast<uint64_t>(magnitude) : round_half_even(magnitude);
    return (uint64_t{0} - rounded) & type.code_mask();
  }
  const uint64_t rounded = value >= 0x1p62 ? static_cast<uint64_t>(value) : round_half_even(value);
  return std::min<uint64_t>(rounded, type.int_max());
}

// An integer given as sign and magnitude; |value| may be 2^63 (i64 min) or up to 2^64 - 1 (u64).
struct WideInt {
  bool negative;
  uint64_t magnitude;
};

WideInt read_integer(DataType type, uint64_t code) {
  code &= type.code_mask();
  if (type.kind() == TypeKind::Bool) return {false, code != 0 ? uint64_t{1} : 0};
  if (type.kind() == TypeKind::SignedInt && (code & sign_mask(type))) {
    return {true, uint64_t{0} - static_cast<uint64_t>(sign_extend(code, type.bits()))};
  }
  return {false, code};
}

uint64_t write_integer(DataType type, WideInt value) {
  if (type.kind() == TypeKind::Bool) return value.magnitude != 0 ? 1 : 0;
  if (value.negative) {
    if (type.kind() == TypeKind::UnsignedInt) return 0;
    const auto limit = static_cast<uint64_t>(-(type.int_min() + 1)) + 1;  // |int_min|
    return (uint64_t{0} - std::min(value.magnitude, limit)) & type.code_mask();
  }
  return std::min(value.magnitude, type.int_max());
}

// The integer as a double rounded to odd: beyond 2^53 the dropped bits are OR-ed into the last kept bit, so
// that a second rounding to a float of at most 51 significand bits equals a single correct rounding.
double to_double_round_to_odd(WideInt value) {
  uint64_t magnitude = value.magnitude;
  int shift = 0;
  if (magnitude >> 53) {
    shift = std::bit_width(magnitude) - 53;
    const bool sticky = (magnitude & ((uint64_t{1} << shift) - 1)) != 0;
    magnitude = (magnitude >> shift) | (sticky ? 1 : 0);
  }
  const double result = std::ldexp(static_cast<double>(magnitude), shift);
  return value.negative ? -result : result;
}

}  // namespace

int64_t sign_extend(uint64_t code, int bits) {
  TILEVM_ASSERT(bits >= 1 && bits <= 64, "sign_extend of {} bits", bits);
  if (bits == 64) return static_cast<int64_t>(code);
  const uint64_t sign = uint64_t{1} << (bits - 1);
  code &= (sign << 1) - 1;
  return static_cast<int64_t>(code ^ sign) - static_cast<int64_t>(sign);
}

bool is_nan_code(DataType type, uint64_t code) {
  const uint64_t magnitude = code & type.code_mask() & ~sign_mask(type);
  switch (type.float_specials()) {
    case FloatSpecials::None:
      return false;
    case FloatSpecials::NanOnly:
      return magnitude == type.nan_code();
    case FloatSpecials::InfNan:
      return magnitude > type.inf_code(false);
  }
  return false;
}

bool is_inf_code(DataType type, uint64_t code) {
  return type.has_inf() && (code & type.code_mask() & ~sign_mask(type)) == type.inf_code(false);
}

double decode(DataType type, uint64_t code) {
  code &= type.code_mask();
  switch (type.kind()) {
    case TypeKind::Bool:
      return code != 0 ? 1.0 : 0.0;
    case TypeKind::SignedInt:
      return static_cast<double>(sign_extend(code, type.bits()));
    case TypeKind::UnsignedInt:
      return static_cast<double>(code);
    case TypeKind::Float:
      if (type == DataType::f64()) return std::bit_cast<double>(code);
      if (type == DataType::f32()) return std::bit_cast<float>(static_cast<uint32_t>(code));
      return decode_float(type, code);
  }
  return 0;
}

uint64_t encode(DataType type, double value) {
  switch (type.kind()) {
    case TypeKind::Bool:
      return value != 0 ? 1 : 0;
    case TypeKind::SignedInt:
    case TypeKind::UnsignedInt:
      return encode_integer(type, value);
    case TypeKind::Float:
      return encode_float(type, value);
  }
  return 0;
}

uint64_t cast_code(DataType from, DataType to, uint64_t code) {
  code &= from.code_mask();
  if (from == to) return code;
  if (from.is_float()) return encode(to, decode(from, code));
  const WideInt value = read_integer(from, code);
  if (!to.is_float()) return write_integer(to, value);
  if (to == DataType::f64()) {
    const auto magnitude = static_cast<double>(value.magnitude);  // one rounding, to nearest even
    return encode(to, value.negative ? -magnitude : magnitude);
  }
  return encode(to, to_double_round_to_odd(value));
}

std::string format_value(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  if (value == 0) return std::signbit(value) ? "-0" : "0";
  return fmt::format("{}", value);
}

}  // namespace tilevm
