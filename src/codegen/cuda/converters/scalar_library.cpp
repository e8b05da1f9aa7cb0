// The scalar conversion library of converters.h: one decoder and one encoder per type, generated from the
// type's parameters with the Cast rules of type/convert.h.
#include <bit>
#include <cmath>

#include <fmt/format.h>

#include "tilevm/codegen/cuda/converters.h"
#include "tilevm/support/error.h"

namespace tilevm::codegen::cuda {

namespace {

std::string hex(uint64_t value) {
  return fmt::format("0x{:x}u", value);
}

// A float constant that reads back exactly ("65504.0f" style through its bits).
std::string float_literal(double value) {
  return fmt::format("__uint_as_float({}u)", std::bit_cast<uint32_t>(static_cast<float>(value)));
}

// Decoder of a float of the generic layout whose every value is a normal f32 or zero (E <= 6, f16).
std::string decode_generic_float(DataType t) {
  const int m = t.mantissa_bits();
  const uint64_t sign = uint64_t{1} << (t.bits() - 1);
  std::string body = fmt::format("  const unsigned int magnitude = code & {};\n", hex(sign - 1));
  if (t.has_inf()) {
    body +=
        fmt::format("  if (magnitude > {}) return __uint_as_float(0x7fc00000u);\n", hex(t.inf_code(false)));
    body += fmt::format(
        "  if (magnitude == {}) return __uint_as_float((code & {}) ? 0xff800000u : 0x7f800000u);\n",
        hex(t.inf_code(false)), hex(sign));
  } else if (t.has_nan()) {
    body += fmt::format("  if (magnitude == {}) return __uint_as_float(0x7fc00000u);\n", hex(t.nan_code()));
  }
  body += fmt::format(
      "  const unsigned int e = magnitude >> {0};\n"
      "  const unsigned int significand = e == 0u ? magnitude : ((magnitude & {1}) | {2});\n"
      "  // significand * 2^(max(e, 1) - bias - M): both factors exact f32 normals\n"
      "  const int exponent = (e == 0u ? 1 : static_cast<int>(e)) - {3};\n"
      "  const float value = static_cast<float>(significand) * __uint_as_float(static_cast<unsigned "
      "int>(exponent + 127) << 23);\n"
      "  return (code & {4}) ? -value : value;\n",
      m, hex((uint64_t{1} << m) - 1), hex(uint64_t{1} << m), t.bias() + m, hex(sign));
  return body;
}

std::string decode_body(DataType t) {
  if (t.is_bool()) return "  return (code & 0xffu) != 0u ? 1.0f : 0.0f;\n";
  if (t.kind() == TypeKind::UnsignedInt)
    return fmt::format("  return static_cast<float>(code & {});\n", hex(t.code_mask()));
  if (t.kind() == TypeKind::SignedInt) {
    const int shift = 32 - t.bits();
    return fmt::format("  return static_cast<float>(static_cast<int>(code << {0}) >> {0});\n", shift);
  }
  if (t == DataType::f32()) return "  return __uint_as_float(code);\n";
  if (t == DataType::bf16()) {
    return "  code &= 0xffffu;\n"
           "  if ((code & 0x7fffu) > 0x7f80u) return __uint_as_float(0x7fc00000u);\n"
           "  return __uint_as_float(code << 16);\n";
  }
  return decode_generic_float(t);
}

std::string encode_integer(DataType t) {
  const bool is_signed = t.kind() == TypeKind::SignedInt;
  if (t.bits() <= 16) {
    return fmt::format(
        "  if (value != value) return 0u;\n"
        "  const float clamped = fminf(fmaxf(value, {}), {});\n"
        "  return static_cast<unsigned int>(static_cast<int>(rintf(clamped))) & {};\n",
        float_literal(static_cast<double>(t.int_min())), float_literal(static_cast<double>(t.int_max())),
        hex(t.code_mask()));
  }
  // 32 and 64 bits: the hardware conversion after explicit NaN and range checks.
  const int bits = t.bits();
  const char* result = bits == 64 ? "unsigned long long" : "unsigned int";
  if (is_signed) {
    const char* convert = bits == 64 ? "__float2ll_rn" : "__float2int_rn";
    return fmt::format(
        "  if (value != value) return 0u;\n"
        "  if (value >= {0}) return {1};\n"
        "  if (value < -{0}) return {2};\n"
        "  return static_cast<{3}>({4}(value));\n",
        float_literal(std::ldexp(1.0, bits - 1)), hex(t.int_max()),
        hex(static_cast<uint64_t>(t.int_min()) & t.code_mask()), result, convert);
  }
  const char* convert = bits == 64 ? "__float2ull_rn" : "__float2uint_rn";
  return fmt::format(
      "  if (!(value > 0.0f)) return 0u;\n"
      "  if (value >= {0}) return {1};\n"
      "  return {2}(value);\n",
      float_literal(std::ldexp(1.0, bits)), hex(t.int_max()), convert);
}

std::string encode_body(DataType t) {
  if (t.is_bool()) return "  return value != 0.0f ? 1u : 0u;\n";
  if (t.is_integer()) return encode_integer(t);
  if (t == DataType::f32()) return "  return value != value ? 0x7fc00000u : __float_as_uint(value);\n";
  if (t == DataType::f64()) {
    return "  if (value != value) return 0x7ff8000000000000ull;\n"
           "  return static_cast<unsigned long long>(__double_as_longlong(static_cast<double>(value)));\n";
  }
  if (t == DataType::f16() || t == DataType::bf16()) {
    const bool f16 = t == DataType::f16();
    return fmt::format(
        "  if (value != value) return {0};\n"
        "  const float magnitude = fabsf(value);\n"
        "  if (magnitude > {1} && magnitude != __uint_as_float(0x7f800000u)) value = copysignf({1}, value);  "
        "// saturate\n"
        "  unsigned short half;\n"
        "  asm(\"cvt.rn.{2}.f32 %0, %1;\" : \"=h\"(half) : \"f\"(value));\n"
        "  return half;\n",
        hex(t.nan_code()), float_literal(t.max_value()), f16 ? "f16" : "bf16");
  }
  // A low-bit float: value = q * 2^(exponent - M) with exponent its binade (at least the smallest normal's);
  // the code is round(q) plus the exponent field, a carry moving into the next binade (as in convert.cpp).
  const int m = t.mantissa_bits();
  const uint64_t sign_shift = static_cast<uint64_t>(t.bits() - 1);
  const uint64_t nan_result = t.has_nan() ? t.nan_code() : t.max_code();
  const uint64_t inf_result = t.has_inf() ? t.inf_code(false) : t.max_code();
  const int min_exponent = 1 - t.bias();
  return fmt::format(
      "  if (value != value) return {0};\n"
      "  const unsigned int sign = (__float_as_uint(value) >> 31) << {1};\n"
      "  const float magnitude = fabsf(value);\n"
      "  if (magnitude >= {2}) return sign | (magnitude == __uint_as_float(0x7f800000u) ? {3} : {4});\n"
      "  int exponent = static_cast<int>(__float_as_uint(magnitude) >> 23) - 127;\n"
      "  if (exponent < {5}) exponent = {5};\n"
      "  const float q = magnitude * __uint_as_float(static_cast<unsigned int>(127 + {6} - exponent) << "
      "23);\n"
      "  const unsigned int rounded = __float2uint_rn(q);  // nearest, ties to even\n"
      "  return sign | ((static_cast<unsigned int>(exponent - ({5})) << {6}) + rounded);\n",
      hex(nan_result), sign_shift, float_literal(t.max_value()), hex(inf_result), hex(t.max_code()),
      min_exponent, m);
}

}  // namespace

bool has_scalar_decoder(DataType type) {
  return type.bits() <= 16 || type == DataType::f32();
}

std::string scalar_decode_function_name(DataType type) {
  return "tvm_decode_" + type.name();
}
std::string scalar_encode_function_name(DataType type) {
  return "tvm_encode_" + type.name();
}

std::string emit_scalar_conversion_functions(DataType type) {
  const std::string guard = "TILEVM_SCALAR_CONVERSIONS_" + type.name();
  std::string out = fmt::format("#ifndef {0}\n#define {0}\n", guard);
  if (has_scalar_decoder(type)) {
    out += fmt::format("__device__ __forceinline__ float {}(unsigned int code) {{\n{}}}\n",
                       scalar_decode_function_name(type), decode_body(type));
  }
  const char* result = type.bits() == 64 ? "unsigned long long" : "unsigned int";
  out += fmt::format("__device__ __forceinline__ {} {}(float value) {{\n{}}}\n", result,
                     scalar_encode_function_name(type), encode_body(type));
  out += fmt::format("#endif  // {}\n", guard);
  return out;
}

std::string emit_scalar_conversion_library() {
  std::string out =
      "// tilevm scalar conversions: tvm_decode_T(code) -> float, tvm_encode_T(float) -> code\n";
  for (DataType type : all_data_types()) out += emit_scalar_conversion_functions(type);
  return out;
}

}  // namespace tilevm::codegen::cuda
