// Rounding of exact results to element types, and scalar value conversions.
#include <cmath>

#include "machine.h"
#include "tilevm/type/convert.h"

namespace tilevm::interp::detail {

uint64_t round_float_result(DataType type, double value) {
  if (type.is_float()) {
    // IEEE overflow: a finite value at or beyond max + ulp(max) / 2 rounds to infinity where there is one.
    if (type.has_inf() && std::isfinite(value) && type.bits() < 64) {
      const double max = type.max_value();
      const double threshold = max + std::ldexp(1.0, std::ilogb(max) - type.mantissa_bits() - 1);
      if (std::fabs(value) >= threshold) return type.inf_code(value < 0);
    }
    return encode(type, value);
  }
  if (type.is_bool()) return value != 0.0 ? 1 : 0;
  // A float computation stored into an integer type: Cast semantics (round to nearest even, clamp).
  return encode(type, value);
}

uint64_t wrap_int_result(DataType type, int64_t value) {
  if (type.is_bool()) return value != 0 ? 1 : 0;
  if (type.is_float()) return round_float_result(type, static_cast<double>(value));
  return static_cast<uint64_t>(value) & type.code_mask();
}

int64_t code_to_int(DataType type, uint64_t code) {
  if (type.is_bool()) return (code & 0xff) != 0 ? 1 : 0;
  if (type.kind() == TypeKind::SignedInt) return sign_extend(code & type.code_mask(), type.bits());
  return static_cast<int64_t>(code & type.code_mask());
}

double scalar_as_double(const ScalarValue& v) {
  return v.is_float ? v.f : static_cast<double>(v.i);
}

ScalarValue convert_scalar(const ScalarValue& v, DataType to) {
  ScalarValue out;
  if (to.is_float()) {
    out.is_float = true;
    out.f = decode(to, round_float_result(to, scalar_as_double(v)));
    return out;
  }
  if (to.is_bool()) {
    out.i = v.is_float ? (v.f != 0.0) : (v.i != 0);
    return out;
  }
  if (v.is_float) {
    out.i = code_to_int(to, encode(to, v.f));  // round to nearest even, clamp (Cast)
  } else {
    out.i = code_to_int(to, wrap_int_result(to, v.i));  // integers wrap
  }
  return out;
}

std::string format_scalar(const ScalarValue& v, DataType type) {
  if (type.is_bool()) return v.i ? "True" : "False";
  if (v.is_float) return format_value(v.f);
  return std::to_string(v.i);
}

std::string format_code(DataType type, uint64_t code) {
  if (type.is_bool()) return (code & 0xff) ? "True" : "False";
  if (type.is_float()) return format_value(decode(type, code));
  if (type.kind() == TypeKind::SignedInt) return std::to_string(code_to_int(type, code));
  return std::to_string(code & type.code_mask());
}

}  // namespace tilevm::interp::detail

namespace tilevm::interp {

uint64_t scalar_to_code(DataType type, const ScalarValue& v) {
  return v.is_float ? detail::round_float_result(type, v.f) : detail::wrap_int_result(type, v.i);
}

}  // namespace tilevm::interp
