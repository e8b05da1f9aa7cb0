// An exact rational constant of a graph (a Const operator's value, rms_norm's eps). A decimal literal such
// as 1e-6 or 0.125 is a rational number, so the finite-field verifier can use it exactly (num * den^-1 mod p)
// where a floating-point value would have to be rounded to something that is not in the field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tilevm::superopt {

struct Constant {
  int64_t num = 0;
  int64_t den = 1;         // > 0, gcd(num, den) == 1
  std::string text = "0";  // as written ("1e-6", "1/64"); printed back unchanged so that text round-trips

  double to_double() const { return static_cast<double>(num) / static_cast<double>(den); }
  bool operator==(const Constant& other) const { return num == other.num && den == other.den; }
};

// Parses "-3", "0.125", "1e-6", "2.5E3" or "1/64". Throws Error when the text is not a number or its exact
// value does not fit num/den in int64 ("constant 1e-30 is not representable: ...").
Constant parse_constant(std::string_view text);
// The constant num/den, reduced, written as "num" or "num/den".
Constant make_constant(int64_t num, int64_t den = 1);

}  // namespace tilevm::superopt
