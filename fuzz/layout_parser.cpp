// Fuzz target: the layout text parser (docs/language.md section 3, `tilevm layout`).
//
// Located means: every error is a tilevm::Error of the form `invalid layout: column N: ...` with N a column
// of the input (1 to its length + 1). A layout that parses must print as text that parses back to an equal
// layout and prints the same (layout_text.h); a small one is also drawn as `tilevm layout` draws it.
#include <charconv>
#include <exception>
#include <string>

#include "fuzz_target.h"
#include "tile_mutator.h"  // numbers and names of the text: the same token mutations serve layouts
#include "tilevm/layout/layout_text.h"
#include "tilevm/support/error.h"

namespace {

// Drawing is linear in (t, i) pairs and elements; bigger layouts are only parsed and printed.
constexpr int64_t kMaxDrawn = 512;

void check_error_located(std::string_view input, const tilevm::Error& e) {
  const std::string_view message = e.what();
  const std::string_view prefix = "invalid layout: column ";
  int column = 0;
  if (message.starts_with(prefix)) {
    const char* first = message.data() + prefix.size();
    const char* last = message.data() + message.size();
    const auto [end, ec] = std::from_chars(first, last, column);
    if (ec != std::errc() || end == last || *end != ':') column = 0;
  }
  if (column < 1 || column > static_cast<int64_t>(input.size()) + 1)
    tilevm::fuzz::failure("a layout error without a column of the input", message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tilevm;
  const std::string_view input = fuzz::as_text(data, size);
  layout::Layout parsed;
  try {
    parsed = layout::parse_layout(input);
  } catch (const Error& e) {
    check_error_located(input, e);
    return 0;
  } catch (const std::exception& e) {
    fuzz::failure("parse_layout threw something other than tilevm::Error", e.what());
  }
  std::string printed;
  try {
    printed = layout::print_layout(parsed);
    const layout::Layout again = layout::parse_layout(printed);
    if (!(again == parsed)) fuzz::failure("parse_layout(print_layout(L)) != L", printed);
    if (layout::print_layout(again) != printed)
      fuzz::failure("print_layout(parse_layout(print_layout(L))) != print_layout(L)", printed);
    if (parsed.num_threads() * parsed.num_locals() <= kMaxDrawn && parsed.num_elements() <= kMaxDrawn) {
      layout::render_layout_picture(parsed);
      layout::render_layout_map(parsed);
      layout::render_layout_svg(parsed);
    }
  } catch (const std::exception& e) {
    fuzz::failure("printing, reparsing or drawing a parsed layout threw", printed + "\n" + e.what());
  }
  return 0;
}
