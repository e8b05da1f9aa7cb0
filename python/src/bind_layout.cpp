// tilevm.layout(EXPR): what `tilevm layout EXPR [--map] [--svg FILE]` prints
// (tools/tilevm/layout_command.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/support/error.h"

namespace tilevm::python {

namespace {

// As the CLI: a picture has a cell per (t, i) pair, so a typo like local(65536, 32768) must not exhaust
// memory.
constexpr int64_t kMaxDrawn = int64_t{1} << 20;

layout::Layout drawable(const std::string& text) {
  layout::Layout l = layout::parse_layout(text);
  if (l.num_threads() * l.num_locals() > kMaxDrawn || l.num_elements() > kMaxDrawn) {
    fail(
        "layout {} is too large to draw: {} threads x {} locals over {} elements; at most {} of each are "
        "drawn",
        layout::print_layout(l), l.num_threads(), l.num_locals(), l.num_elements(), kMaxDrawn);
  }
  return l;
}

nb::dict describe(const std::string& text) {
  const layout::Layout l = layout::parse_layout(text);
  nb::dict d;
  d["text"] = layout::print_layout(l);
  d["shape"] = std::vector<int64_t>(l.shape().begin(), l.shape().end());
  d["threads"] = l.num_threads();
  d["locals"] = l.num_locals();
  return d;
}

}  // namespace

void bind_layout(nb::module_& m) {
  m.def("layout_info", &describe, nb::arg("text"), "canonical text, shape, threads and locals of a layout");
  m.def(
      "layout_picture", [](const std::string& t) { return layout::render_layout_picture(drawable(t)); },
      nb::arg("text"));
  m.def(
      "layout_map", [](const std::string& t) { return layout::render_layout_map(drawable(t)); },
      nb::arg("text"));
  m.def(
      "layout_svg", [](const std::string& t) { return layout::render_layout_svg(drawable(t)); },
      nb::arg("text"));
}

}  // namespace tilevm::python
