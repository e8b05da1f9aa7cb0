// DataType: the element types of docs/language.md section 2 as a small value type.
//
//   name                 kind         bits  exponent/mantissa  specials
//   i1..i8 i16 i32 i64   SignedInt    b     -                  two's complement in b bits
//   u1..u8 u16 u32 u64   UnsignedInt  b     -                  -
//   f<b>e<E>m<M>         Float        b     E / M, b = 1+E+M   see FloatSpecials; 3 <= b <= 8, E, M >= 1
//   f16 bf16 f32 f64     Float        16..  5/10 8/7 8/23 11/52 IEEE (inf and NaN)
//   bool                 Bool         8     -                  one byte, 0 or 1
//
// A code is the raw bit pattern of one element, held in the low bits() bits of a uint64_t (for signed
// integers the two's-complement pattern in bits() bits, so i4 -1 is code 15). Conversions between codes and
// values live in convert.h; packing of sub-byte codes into byte streams in packing.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tilevm {

enum class TypeKind : uint8_t { Bool, SignedInt, UnsignedInt, Float };

// Which codes of a float type are not numbers. Every float has a sign bit, so every float has -0.
enum class FloatSpecials : uint8_t {
  None,     // finite-only: every code is a number; the all-ones exponent is an ordinary binade (f4e2m1)
  NanOnly,  // OCP "FN": only S.1111.111 is NaN, no infinity (f8e4m3)
  InfNan,   // IEEE: all-ones exponent is infinity (mantissa 0) or NaN (f8e5m2, f7e5m1, f16, bf16, f32, f64)
};

// "bool", "signed_int", "unsigned_int", "float".
std::string_view to_string(TypeKind kind);

class DataType {
 public:
  // Factories for every legal type; an illegal width or split is a user error (tilevm::Error).
  static DataType int_(int bits);                      // 1..8, 16, 32, 64
  static DataType uint(int bits);                      // 1..8, 16, 32, 64
  static DataType float_(int exponent, int mantissa);  // 1+E+M in 3..8, or one of the IEEE splits

  // Parses a name of docs/language.md section 2. Throws tilevm::Error naming the 0-based character position
  // and what was expected there, e.g. "invalid data type 'f9e4m3': at position 1: a low-bit float has 3 to 8
  // bits, got 9". Only the documented spellings are accepted: binary16 is "f16", never "f16e5m10".
  static DataType parse(std::string_view name);

  static constexpr DataType boolean() { return {8, TypeKind::Bool, 0, 0}; }
  static constexpr DataType i8() { return {8, TypeKind::SignedInt, 0, 0}; }
  static constexpr DataType i16() { return {16, TypeKind::SignedInt, 0, 0}; }
  static constexpr DataType i32() { return {32, TypeKind::SignedInt, 0, 0}; }
  static constexpr DataType i64() { return {64, TypeKind::SignedInt, 0, 0}; }
  static constexpr DataType u8() { return {8, TypeKind::UnsignedInt, 0, 0}; }
  static constexpr DataType u16() { return {16, TypeKind::UnsignedInt, 0, 0}; }
  static constexpr DataType u32() { return {32, TypeKind::UnsignedInt, 0, 0}; }
  static constexpr DataType u64() { return {64, TypeKind::UnsignedInt, 0, 0}; }
  static constexpr DataType f8e4m3() { return {8, TypeKind::Float, 4, 3}; }
  static constexpr DataType f8e5m2() { return {8, TypeKind::Float, 5, 2}; }
  static constexpr DataType f16() { return {16, TypeKind::Float, 5, 10}; }
  static constexpr DataType bf16() { return {16, TypeKind::Float, 8, 7}; }
  static constexpr DataType f32() { return {32, TypeKind::Float, 8, 23}; }
  static constexpr DataType f64() { return {64, TypeKind::Float, 11, 52}; }

  // The canonical name; parse(t.name()) == t for every type.
  std::string name() const;

  constexpr int bits() const { return bits_; }
  constexpr TypeKind kind() const { return kind_; }
  constexpr bool is_bool() const { return kind_ == TypeKind::Bool; }
  constexpr bool is_float() const { return kind_ == TypeKind::Float; }
  constexpr bool is_integer() const { return kind_ == TypeKind::SignedInt || kind_ == TypeKind::UnsignedInt; }
  constexpr bool is_signed() const { return kind_ == TypeKind::SignedInt || kind_ == TypeKind::Float; }
  // A float of 8 bits or fewer written f<b>e<E>m<M>.
  constexpr bool is_low_bit_float() const { return is_float() && bits_ <= 8; }
  // Elements narrower than a byte are stored as a packed bit stream (packing.h).
  constexpr bool is_sub_byte() const { return bits_ < 8; }
  // Bytes of one element for types of 8 bits or more; sub-byte types have no per-element byte size.
  int storage_bytes() const;
  // The mask of the low bits() bits, where codes live.
  constexpr uint64_t code_mask() const { return bits_ == 64 ? ~uint64_t{0} : (uint64_t{1} << bits_) - 1; }

  // Floats only (0 for other kinds).
  constexpr int exponent_bits() const { return exponent_; }
  constexpr int mantissa_bits() const { return mantissa_; }
  constexpr int bias() const { return exponent_ == 0 ? 0 : (1 << (exponent_ - 1)) - 1; }
  FloatSpecials float_specials() const;
  bool has_inf() const { return float_specials() == FloatSpecials::InfNan; }
  bool has_nan() const { return float_specials() != FloatSpecials::None; }

  // Value range as doubles. min_value() is the lowest finite value (-max for floats). For i64 and u64 the
  // doubles are rounded; int_min() and int_max() are exact for every integer type and bool.
  double max_value() const;
  double min_value() const;
  int64_t int_min() const;
  uint64_t int_max() const;
  // Floats only: the smallest positive subnormal and the smallest positive normal value.
  double smallest_subnormal() const;
  double smallest_normal() const;

  // Codes (floats): the largest finite positive value, its negation, +-infinity and the canonical NaN (a
  // positive quiet NaN: mantissa MSB set for IEEE types, S.1111.111 for f8e4m3). Asserts the code exists.
  uint64_t max_code() const;
  uint64_t lowest_code() const;
  uint64_t inf_code(bool negative) const;
  uint64_t nan_code() const;

  friend constexpr bool operator==(DataType, DataType) = default;

 private:
  constexpr DataType(int bits, TypeKind kind, int exponent, int mantissa)
      : bits_(static_cast<uint8_t>(bits)),
        kind_(kind),
        exponent_(static_cast<uint8_t>(exponent)),
        mantissa_(static_cast<uint8_t>(mantissa)) {}

  uint8_t bits_;
  TypeKind kind_;
  uint8_t exponent_;
  uint8_t mantissa_;
};

// Every legal type: bool, the integers, every low-bit float split, then f16, bf16, f32, f64 (a fixed order).
std::vector<DataType> all_data_types();

}  // namespace tilevm

template <>
struct std::hash<tilevm::DataType> {
  size_t operator()(tilevm::DataType t) const noexcept {
    return std::hash<uint32_t>{}(static_cast<uint32_t>(t.bits()) | static_cast<uint32_t>(t.kind()) << 8 |
                                 static_cast<uint32_t>(t.exponent_bits()) << 16 |
                                 static_cast<uint32_t>(t.mantissa_bits()) << 24);
  }
};
