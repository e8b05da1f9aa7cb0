// Exact rational constants from decimal or fraction text.
#include "tilevm/superopt/constant.h"

#include <cctype>
#include <numeric>

#include "tilevm/support/error.h"

namespace tilevm::superopt {

namespace {

// __extension__: -Wpedantic rejects __int128 otherwise; an exact decimal needs more than 64 bits mid-way.
__extension__ typedef __int128 Wide;
constexpr Wide kLimit = static_cast<Wide>(INT64_MAX);

[[noreturn]] void not_representable(std::string_view text) {
  fail("constant {} is not representable as an exact fraction of 64-bit integers", text);
}

// num / den from a decimal literal, both < 2^63 after reduction.
Constant parse_decimal(std::string_view text, std::string_view whole) {
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  Wide num = 0;
  int scale = 0;  // value = num * 10^scale
  bool digits = false, point = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      num = num * 10 + (c - '0');
      if (num > kLimit * 1000) not_representable(whole);
      if (point) --scale;
      digits = true;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!digits) fail("'{}' is not a number", whole);
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) exp_negative = text[i++] == '-';
    int exponent = 0;
    bool exp_digits = false;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      exponent = exponent * 10 + (text[i] - '0');
      if (exponent > 40) not_representable(whole);
      exp_digits = true;
    }
    if (!exp_digits) fail("'{}' is not a number", whole);
    scale += exp_negative ? -exponent : exponent;
  }
  if (i != text.size()) fail("'{}' is not a number", whole);
  Wide den = 1;
  for (; scale > 0; --scale) {
    num *= 10;
    if (num > kLimit) not_representable(whole);
  }
  for (; scale < 0; ++scale) {
    den *= 10;
    if (den > kLimit * 1000) not_representable(whole);
  }
  Wide g = den;
  for (Wide a = num; a != 0;) {
    Wide r = g % a;
    g = a;
    a = r;
  }
  num /= g;
  den /= g;
  if (num > kLimit || den > kLimit) not_representable(whole);
  Constant c;
  c.num = static_cast<int64_t>(negative ? -num : num);
  c.den = static_cast<int64_t>(den);
  c.text = std::string(whole);
  return c;
}

}  // namespace

Constant make_constant(int64_t num, int64_t den) {
  if (den == 0) fail("constant {}/0 divides by zero", num);
  if (den < 0) num = -num, den = -den;
  int64_t g = std::gcd(num, den);
  if (g > 1) num /= g, den /= g;
  Constant c;
  c.num = num;
  c.den = den;
  c.text = den == 1 ? fmt::format("{}", num) : fmt::format("{}/{}", num, den);
  return c;
}

Constant parse_constant(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return parse_decimal(text, text);
  Constant a = parse_decimal(text.substr(0, slash), text);
  Constant b = parse_decimal(text.substr(slash + 1), text);
  if (a.den != 1 || b.den != 1) fail("'{}': a fraction's parts must be integers", text);
  if (b.num == 0) fail("constant {} divides by zero", text);
  Constant c = make_constant(a.num, b.num);
  c.text = std::string(text);
  return c;
}

}  // namespace tilevm::superopt
