// Fuzz target: the data type name parser (docs/language.md section 2, `tilevm dtype`).
//
// Located means: every error is a tilevm::Error naming `at position N` with N a position of the input (0
// to its length). A type that parses must give back itself from its canonical name, and for types of 8
// bits or fewer every code must decode and encode back as `tilevm dtype --table` needs.
#include <charconv>
#include <cmath>
#include <exception>
#include <string>

#include "fuzz_target.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/data_type.h"

namespace {

void check_error_located(std::string_view input, const tilevm::Error& e) {
  const std::string_view message = e.what();
  // The last one: the name itself, quoted at the start, may contain the words.
  const size_t at = message.rfind(": at position ");
  size_t position = std::string_view::npos;
  if (at != std::string_view::npos) {
    const char* first = message.data() + at + 14;
    const auto [end, ec] = std::from_chars(first, message.data() + message.size(), position);
    if (ec != std::errc() || end == message.data() + message.size() || *end != ':')
      position = std::string_view::npos;
  }
  if (position == std::string_view::npos || position > input.size())
    tilevm::fuzz::failure("a data type error without a position in the input", message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tilevm;
  const std::string_view input = fuzz::as_text(data, size);
  DataType type = DataType::f32();
  try {
    type = DataType::parse(input);
  } catch (const Error& e) {
    check_error_located(input, e);
    return 0;
  } catch (const std::exception& e) {
    fuzz::failure("DataType::parse threw something other than tilevm::Error", e.what());
  }
  try {
    if (DataType::parse(type.name()) != type) fuzz::failure("parse(t.name()) != t", type.name());
    if (type.bits() <= 8) {
      for (uint64_t code = 0; code <= type.code_mask(); ++code) {
        const double value = decode(type, code);
        // Every value but NaN is one code's: encoding it gives that code back (-0 and 0 are distinct).
        if (!std::isnan(value) && decode(type, encode(type, value)) != value)
          fuzz::failure("decode(encode(v)) != v", fmt::format("{} code {}", type.name(), code));
      }
    }
  } catch (const std::exception& e) {
    fuzz::failure("a parsed type's name or codes threw", type.name() + ": " + e.what());
  }
  return 0;
}
