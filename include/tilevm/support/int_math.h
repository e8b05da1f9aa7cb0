// Integer helpers for sizes on the host.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace tilevm {

// ceil(a / b) for a >= 0, b > 0 (tile and wave counts).
constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Checked arithmetic for sizes computed from user input: nullopt when the exact result does not fit int64.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
// The product of the extents, or nullopt when it overflows.
inline std::optional<int64_t> checked_product(std::span<const int64_t> extents) {
  int64_t r = 1;
  for (int64_t e : extents)
    if (__builtin_mul_overflow(r, e, &r)) return std::nullopt;
  return r;
}

}  // namespace tilevm
