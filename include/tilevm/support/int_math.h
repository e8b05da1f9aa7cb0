// Integer helpers for sizes on the host.
#pragma once

#include <cstdint>

namespace tilevm {

// ceil(a / b) for a >= 0, b > 0 (tile and wave counts).
constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace tilevm
