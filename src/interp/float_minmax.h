// min and max of floats as the language defines them (docs/language.md section 2): a NaN operand is ignored
// (fmin/fmax), and -0 orders below +0, so that min(-0, +0) is -0 and max(-0, +0) is +0 whichever comes first.
// std::fmin leaves the zeros' order unspecified (and two builds of the interpreter disagreed); the CUDA
// prelude's tv_fmin/tv_fmax compute the same.
#pragma once

#include <cmath>

namespace tilevm::interp::detail {

inline double float_min(double x, double y) {
  return x == y ? (std::signbit(x) ? x : y) : std::fmin(x, y);
}
inline double float_max(double x, double y) {
  return x == y ? (std::signbit(x) ? y : x) : std::fmax(x, y);
}

}  // namespace tilevm::interp::detail
