// The text pictures of a layout: render_layout_picture (a grid of `t:i` cells) and render_layout_map
// (one `t i : index` line per (t, i)).
//
//   layout spatial(2, 2).local(1, 2) shape=[2, 4] threads=4 locals=2
//       |   0   1   2   3
//   ----+----------------
//     0 | 0:0 0:1 1:0 1:1
//     1 | 2:0 2:1 3:0 3:1
//
// Every cell has the same width, so columns line up whatever the owners. Rank 1 is one row without a row
// label; rank 0 is the single cell; a higher rank draws one grid of the last two dimensions per leading
// index, each headed `[a, b, :, :]`.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tilevm/layout/layout.h"
#include "tilevm/layout/layout_text.h"

namespace tilevm::layout {
namespace {

// The owners of `index` as `t:i|t:i...` ("." if none, which no layout of the algebra produces).
std::string cell_text(const Layout& layout, const Index& index) {
  std::vector<std::string> owners;
  for (auto [t, i] : layout.owners(index)) owners.push_back(fmt::format("{}:{}", t, i));
  if (owners.empty()) return ".";
  return fmt::format("{}", fmt::join(owners, "|"));
}

// One grid: `rows` x `cols` cells of the slice whose leading indices are `prefix`. `row_labels` is false
// for rank 1 (a single row needs no label).
void render_grid(const Layout& layout, const Index& prefix, int64_t rows, int64_t cols, bool row_labels,
                 std::string& out) {
  std::vector<std::string> cells;
  size_t width = fmt::format("{}", cols - 1).size();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      Index index = prefix;
      if (row_labels) index.push_back(r);
      index.push_back(c);
      cells.push_back(cell_text(layout, index));
      width = std::max(width, cells.back().size());
    }
  }
  size_t label_width = row_labels ? fmt::format("{}", rows - 1).size() + 2 : 0;
  std::string gutter = row_labels ? fmt::format("{:>{}}|", "", label_width) : "";
  std::string header = gutter;
  for (int64_t c = 0; c < cols; ++c) header += fmt::format("  {:>{}}", c, width);
  out += header + "\n";
  if (row_labels)
    out += std::string(label_width, '-') + "+" + std::string(header.size() - gutter.size(), '-') + "\n";
  for (int64_t r = 0; r < rows; ++r) {
    std::string line = row_labels ? fmt::format("{:>{}} |", r, label_width - 1) : "";
    for (int64_t c = 0; c < cols; ++c) line += fmt::format("  {:>{}}", cells[r * cols + c], width);
    out += line + "\n";
  }
}

}  // namespace

std::string render_layout_picture(const Layout& layout) {
  std::string out = fmt::format("layout {} shape=[{}] threads={} locals={}\n", print_layout(layout),
                                fmt::join(layout.shape(), ", "), layout.num_threads(), layout.num_locals());
  const Index& shape = layout.shape();
  int rank = layout.rank();
  if (rank == 0) return out + cell_text(layout, {}) + "\n";
  if (rank == 1) {
    render_grid(layout, {}, 1, shape[0], /*row_labels=*/false, out);
    return out;
  }
  // Leading indices in row-major order; one grid each.
  int lead = rank - 2;
  Index prefix(lead, 0);
  int64_t slices = 1;
  for (int d = 0; d < lead; ++d) slices *= shape[d];
  for (int64_t s = 0; s < slices; ++s) {
    if (lead > 0) {
      if (s > 0) out += "\n";
      out += fmt::format("[{}, :, :]\n", fmt::join(prefix, ", "));
    }
    render_grid(layout, prefix, shape[rank - 2], shape[rank - 1], /*row_labels=*/true, out);
    for (int d = lead - 1; d >= 0 && ++prefix[d] == shape[d]; --d) prefix[d] = 0;
  }
  return out;
}

std::string render_layout_map(const Layout& layout) {
  std::string out;
  for (int64_t t = 0; t < layout.num_threads(); ++t) {
    for (int64_t i = 0; i < layout.num_locals(); ++i) {
      Index index = layout.map(t, i);
      out += fmt::format("{} {} :", t, i);
      for (int64_t x : index) out += fmt::format(" {}", x);
      out += "\n";
    }
  }
  return out;
}

}  // namespace tilevm::layout
