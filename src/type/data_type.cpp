#include "tilevm/type/data_type.h"

#include <cmath>
#include <limits>

#include "tilevm/support/error.h"

namespace tilevm {

namespace {

bool is_int_width(int bits) {
  return (bits >= 1 && bits <= 8) || bits == 16 || bits == 32 || bits == 64;
}

bool is_low_bit_split(int exponent, int mantissa) {
  const int bits = 1 + exponent + mantissa;
  return exponent >= 1 && mantissa >= 1 && bits >= 3 && bits <= 8;
}

bool is_ieee_split(int exponent, int mantissa) {
  return (exponent == 5 && mantissa == 10) || (exponent == 8 && mantissa == 7) ||
         (exponent == 8 && mantissa == 23) || (exponent == 11 && mantissa == 52);
}

}  // namespace

std::string_view to_string(TypeKind kind) {
  switch (kind) {
    case TypeKind::Bool:
      return "bool";
    case TypeKind::SignedInt:
      return "signed_int";
    case TypeKind::UnsignedInt:
      return "unsigned_int";
    case TypeKind::Float:
      return "float";
  }
  return "?";
}

DataType DataType::int_(int bits) {
  if (!is_int_width(bits)) fail("an integer has 1 to 8, 16, 32 or 64 bits, got {}", bits);
  return {bits, TypeKind::SignedInt, 0, 0};
}

DataType DataType::uint(int bits) {
  if (!is_int_width(bits)) fail("an integer has 1 to 8, 16, 32 or 64 bits, got {}", bits);
  return {bits, TypeKind::UnsignedInt, 0, 0};
}

DataType DataType::float_(int exponent, int mantissa) {
  if (!is_low_bit_split(exponent, mantissa) && !is_ieee_split(exponent, mantissa)) {
    fail(
        "no float has {} exponent and {} mantissa bits: a low-bit float has E >= 1, M >= 1 and 3 <= 1+E+M <= "
        "8; "
        "the wider floats are f16 (5, 10), bf16 (8, 7), f32 (8, 23) and f64 (11, 52)",
        exponent, mantissa);
  }
  return {1 + exponent + mantissa, TypeKind::Float, exponent, mantissa};
}

std::string DataType::name() const {
  switch (kind_) {
    case TypeKind::Bool:
      return "bool";
    case TypeKind::SignedInt:
      return fmt::format("i{}", bits_);
    case TypeKind::UnsignedInt:
      return fmt::format("u{}", bits_);
    case TypeKind::Float:
      if (*this == bf16()) return "bf16";
      if (bits_ > 8) return fmt::format("f{}", bits_);
      return fmt::format("f{}e{}m{}", bits_, exponent_, mantissa_);
  }
  return "?";
}

int DataType::storage_bytes() const {
  TILEVM_ASSERT(bits_ >= 8, "{} is narrower than a byte and is stored packed", name());
  return bits_ / 8;
}

FloatSpecials DataType::float_specials() const {
  if (!is_float()) return FloatSpecials::None;
  if (bits_ > 8 || exponent_ >= 5) return FloatSpecials::InfNan;
  if (exponent_ == 4 && mantissa_ == 3) return FloatSpecials::NanOnly;
  return FloatSpecials::None;
}

int64_t DataType::int_min() const {
  if (kind_ == TypeKind::SignedInt)
    return bits_ == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits_ - 1));
  TILEVM_ASSERT(!is_float(), "int_min() of float type {}", name());
  return 0;
}

uint64_t DataType::int_max() const {
  switch (kind_) {
    case TypeKind::Bool:
      return 1;
    case TypeKind::SignedInt:
      return code_mask() >> 1;
    case TypeKind::UnsignedInt:
      return code_mask();
    case TypeKind::Float:
      break;
  }
  TILEVM_ASSERT(false, "int_max() of float type {}", name());
  return 0;
}

uint64_t DataType::max_code() const {
  TILEVM_ASSERT(is_float(), "max_code() of non-float type {}", name());
  const uint64_t exponent_ones = (uint64_t{1} << exponent_) - 1;
  const uint64_t mantissa_ones = (uint64_t{1} << mantissa_) - 1;
  switch (float_specials()) {
    case FloatSpecials::None:
      return (exponent_ones << mantissa_) | mantissa_ones;
    case FloatSpecials::NanOnly:  // S.1111.111 is NaN, so the largest number is S.1111.110
      return (exponent_ones << mantissa_) | (mantissa_ones - 1);
    case FloatSpecials::InfNan:
      return ((exponent_ones - 1) << mantissa_) | mantissa_ones;
  }
  return 0;
}

uint64_t DataType::lowest_code() const {
  return max_code() | uint64_t{1} << (bits_ - 1);
}

uint64_t DataType::inf_code(bool negative) const {
  TILEVM_ASSERT(has_inf(), "{} has no infinity", name());
  const uint64_t code = ((uint64_t{1} << exponent_) - 1) << mantissa_;
  return negative ? code | uint64_t{1} << (bits_ - 1) : code;
}

uint64_t DataType::nan_code() const {
  TILEVM_ASSERT(has_nan(), "{} has no NaN", name());
  if (float_specials() == FloatSpecials::NanOnly) return code_mask() >> 1;
  return inf_code(false) | uint64_t{1} << (mantissa_ - 1);
}

double DataType::max_value() const {
  if (!is_float()) return static_cast<double>(int_max());
  if (*this == f64()) return std::numeric_limits<double>::max();
  // max_code's magnitude is (biased exponent, mantissa) of a normal number.
  const uint64_t code = max_code();
  const int biased = static_cast<int>(code >> mantissa_);
  const uint64_t mantissa = code & ((uint64_t{1} << mantissa_) - 1);
  return std::ldexp(static_cast<double>((uint64_t{1} << mantissa_) | mantissa), biased - bias() - mantissa_);
}

double DataType::min_value() const {
  if (is_float()) return -max_value();
  return static_cast<double>(int_min());
}

double DataType::smallest_subnormal() const {
  TILEVM_ASSERT(is_float(), "smallest_subnormal() of non-float type {}", name());
  return std::ldexp(1.0, 1 - bias() - mantissa_);
}

double DataType::smallest_normal() const {
  TILEVM_ASSERT(is_float(), "smallest_normal() of non-float type {}", name());
  return std::ldexp(1.0, 1 - bias());
}

std::vector<DataType> all_data_types() {
  std::vector<DataType> types{DataType::boolean()};
  for (int bits : {1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64}) types.push_back(DataType::int_(bits));
  for (int bits : {1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64}) types.push_back(DataType::uint(bits));
  for (int bits = 3; bits <= 8; ++bits) {
    for (int exponent = 1; exponent <= bits - 2; ++exponent)
      types.push_back(DataType::float_(exponent, bits - 1 - exponent));
  }
  for (DataType t : {DataType::f16(), DataType::bf16(), DataType::f32(), DataType::f64()}) types.push_back(t);
  return types;
}

}  // namespace tilevm
