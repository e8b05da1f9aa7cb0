// DataType::parse: a hand-written scanner over the grammar of docs/language.md section 2
//
//   name   := "bool" | "bf16" | ("i" | "u") width | "f" width [ "e" number "m" number ]
//   width  := decimal without leading zeros
//
// so that every error can say at which character it stopped and what it expected there.
#include <algorithm>
#include <cctype>
#include <cstdint>

#include "tilevm/support/error.h"
#include "tilevm/type/data_type.h"

namespace tilevm {

namespace {

class NameParser {
 public:
  explicit NameParser(std::string_view text) : text_(text) {}

  DataType parse() {
    if (text_ == "bool") return DataType::boolean();
    if (text_ == "bf16") return DataType::bf16();
    if (text_.empty()) error(0, "expected a type name such as i8, u4, f8e4m3, f16, bf16 or bool");
    const char head = text_[0];
    pos_ = 1;
    if (head == 'i' || head == 'u') return parse_integer(head);
    if (head == 'f') return parse_float();
    if (head == 'b') error(0, "expected 'bool' or 'bf16'");
    error(0, "expected 'i', 'u', 'f', 'bf16' or 'bool', got {}", describe(0));
  }

 private:
  DataType parse_integer(char head) {
    const size_t at = pos_;
    const int64_t bits = number(fmt::format("a bit width after '{}'", head));
    if (!((bits >= 1 && bits <= 8) || bits == 16 || bits == 32 || bits == 64)) {
      error(at, "an integer has 1 to 8, 16, 32 or 64 bits, got {}", text_.substr(at, pos_ - at));
    }
    expect_end();
    return head == 'i' ? DataType::int_(static_cast<int>(bits)) : DataType::uint(static_cast<int>(bits));
  }

  DataType parse_float() {
    const size_t width_at = pos_;
    const int64_t bits = number("a bit width after 'f'");
    const std::string_view width = text_.substr(width_at, pos_ - width_at);
    const bool ieee = bits == 16 || bits == 32 || bits == 64;
    const bool low_bit = bits >= 3 && bits <= 8;
    if (pos_ == text_.size()) {
      if (bits == 16) return DataType::f16();
      if (bits == 32) return DataType::f32();
      if (bits == 64) return DataType::f64();
      if (low_bit) error(pos_, "expected 'e' and the exponent bits (a low-bit float is f<b>e<E>m<M>)");
      error(width_at, "a float has 3 to 8 bits (f<b>e<E>m<M>) or is f16, f32 or f64, got {}", width);
    }
    if (text_[pos_] != 'e') {
      if (ieee) error(pos_, "unexpected {} after 'f{}'", describe(pos_), width);
      error(pos_, "expected 'e' and the exponent bits (a low-bit float is f<b>e<E>m<M>), got {}",
            describe(pos_));
    }
    if (ieee)
      error(pos_, "f{} is IEEE binary{} and takes no exponent/mantissa split; write 'f{}'", width, width,
            width);
    if (!low_bit) error(width_at, "a low-bit float has 3 to 8 bits, got {}", width);
    ++pos_;
    const size_t exponent_at = pos_;
    const int64_t exponent = number("the number of exponent bits after 'e'");
    if (exponent < 1) error(exponent_at, "a float has at least 1 exponent bit, got {}", exponent);
    if (pos_ == text_.size() || text_[pos_] != 'm') {
      error(pos_, "expected 'm' and the mantissa bits (a low-bit float is f<b>e<E>m<M>), got {}",
            describe(pos_));
    }
    ++pos_;
    const size_t mantissa_at = pos_;
    const int64_t mantissa = number("the number of mantissa bits after 'm'");
    if (mantissa < 1) error(mantissa_at, "a low-bit float has at least 1 mantissa bit, got {}", mantissa);
    expect_end();
    if (1 + exponent + mantissa != bits) {
      error(width_at, "the width must be 1 + E + M = {}, got {}", 1 + exponent + mantissa, width);
    }
    return DataType::float_(static_cast<int>(exponent), static_cast<int>(mantissa));
  }

  // A decimal number at pos_ (no sign, no leading zeros); large values saturate, which is still out of range.
  int64_t number(const std::string& what) {
    const size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      value = std::min<int64_t>(value * 10 + (text_[pos_] - '0'), int64_t{1} << 40);
      ++pos_;
    }
    if (pos_ == start) error(start, "expected {}, got {}", what, describe(start));
    if (text_[start] == '0' && pos_ - start > 1) error(start, "expected a number without leading zeros");
    return value;
  }

  void expect_end() {
    if (pos_ != text_.size()) error(pos_, "unexpected {} after the type name", describe(pos_));
  }

  // "'x'" for a printable character, "byte 0x07" otherwise, "the end of the name" past it.
  std::string describe(size_t at) const {
    if (at >= text_.size()) return "the end of the name";
    const auto c = static_cast<unsigned char>(text_[at]);
    if (std::isprint(c)) return fmt::format("'{}'", static_cast<char>(c));
    return fmt::format("byte 0x{:02x}", c);
  }

  template <typename... Args>
  [[noreturn]] void error(size_t at, fmt::format_string<Args...> format, Args&&... args) const {
    fail("invalid data type '{}': at position {}: {}", quoted(), at,
         fmt::format(format, std::forward<Args>(args)...));
  }

  // The name as typed, with non-printable bytes escaped so that the message stays on one line.
  std::string quoted() const {
    std::string out;
    for (char c : text_) {
      if (std::isprint(static_cast<unsigned char>(c))) {
        out += c;
      } else {
        out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
      }
    }
    return out;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

DataType DataType::parse(std::string_view name) {
  return NameParser(name).parse();
}

}  // namespace tilevm
