// tilevm.layout(EXPR): what `tilevm layout EXPR [--map] [--svg FILE]` prints
// (tools/tilevm/layout_command.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/layout/tiled_storage.h"
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

// The bytes of a tensor of codes (any rank, row-major) stored in tiles of a layout: what a kernel reading
// `ViewGlobal(ptr, dtype=, shape=codes.shape, layout=L)` expects behind ptr.
nb::ndarray<nb::numpy, uint8_t> pack_tiled(const std::string& text,
                                           nb::ndarray<const uint64_t, nb::c_contig, nb::device::cpu> codes,
                                           int bits) {
  layout::Index shape;
  for (size_t d = 0; d < codes.ndim(); ++d) shape.push_back(static_cast<int64_t>(codes.shape(d)));
  const layout::TiledStorage storage(layout::parse_layout(text), shape);
  std::vector<uint8_t> bytes;
  {
    nb::gil_scoped_release release;
    bytes = storage.pack(bits, std::span<const uint64_t>(codes.data(), codes.size()));
  }
  const size_t size = bytes.size();
  return to_numpy(std::move(bytes), {size});
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
  m.def("layout_pack_tiled", &pack_tiled, nb::arg("text"), nb::arg("codes"), nb::arg("bits"),
        "the packed bytes of a tensor of codes stored in tiles of the layout");
  m.def(
      "layout_svg", [](const std::string& t) { return layout::render_layout_svg(drawable(t)); },
      nb::arg("text"));
}

}  // namespace tilevm::python
