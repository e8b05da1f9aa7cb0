// render_layout_svg: a standalone SVG picture of a layout.
//
// The tile is drawn as a grid of the last two dimensions (one row for rank 1, one cell for rank 0; higher
// ranks stack one grid per leading index, top to bottom, each headed `[a, b, :, :]`). A cell is labelled with
// its owners `t:i`, one per line (the last line `+n more` when there are too many), and filled with a colour
// picked by its first owner's thread: hues spaced by the golden ratio so that neighbouring threads differ
// clearly, light enough for black text.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "tilevm/layout/layout.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/support/xml_escape.h"

namespace tilevm::layout {
namespace {

constexpr int kFontSize = 12;
constexpr double kCharWidth = 7.3;  // of the monospace font at kFontSize, generously
constexpr int kLineHeight = 14;
constexpr int kMaxLines = 4;  // owners shown in one cell before `+n more`
constexpr int kMargin = 16;
constexpr double kTitleCharWidth = 8.2;  // bold, at kFontSize + 1
constexpr int kTitleHeight = 44;         // two lines
constexpr int kSliceHeaderHeight = 24;
constexpr int kAxisHeight = 18;  // the column index row above each grid

// Golden-ratio hue spacing: thread t and t + 1 are about 222 degrees apart, and no two of the first few
// dozen threads share a hue closely.
std::string thread_colour(int64_t thread) {
  double hue = std::fmod(static_cast<double>(thread) * 0.6180339887498949, 1.0) * 360.0;
  return fmt::format("hsl({:.1f}, 75%, 82%)", hue);
}

struct Cell {
  std::vector<std::string> lines;
  int64_t first_thread = -1;  // -1: no owner
};

Cell make_cell(const Layout& layout, const Index& index) {
  Cell cell;
  auto owners = layout.owners(index);
  if (!owners.empty()) cell.first_thread = owners.front().first;
  size_t shown = owners.size() <= kMaxLines ? owners.size() : kMaxLines - 1;
  for (size_t k = 0; k < shown; ++k)
    cell.lines.push_back(fmt::format("{}:{}", owners[k].first, owners[k].second));
  if (shown < owners.size()) cell.lines.push_back(fmt::format("+{} more", owners.size() - shown));
  return cell;
}

struct Slice {
  std::string header;  // empty for rank <= 2
  int64_t rows = 1;
  int64_t cols = 1;
  std::vector<Cell> cells;  // row-major
};

}  // namespace

std::string render_layout_svg(const Layout& layout) {
  const Index& shape = layout.shape();
  int rank = layout.rank();
  int lead = std::max(rank - 2, 0);
  int64_t rows = rank >= 2 ? shape[rank - 2] : 1;
  int64_t cols = rank >= 1 ? shape[rank - 1] : 1;

  // Gather every slice's cells first: the cell size is uniform across the picture.
  std::vector<Slice> slices;
  Index prefix(lead, 0);
  int64_t count = 1;
  for (int d = 0; d < lead; ++d) count *= shape[d];
  size_t max_chars = 3;
  size_t max_lines = 1;
  for (int64_t s = 0; s < count; ++s) {
    Slice slice;
    slice.rows = rows;
    slice.cols = cols;
    if (lead > 0) slice.header = fmt::format("[{}, :, :]", fmt::join(prefix, ", "));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        Index index = prefix;
        if (rank >= 2) index.push_back(r);
        if (rank >= 1) index.push_back(c);
        slice.cells.push_back(make_cell(layout, index));
        max_lines = std::max(max_lines, slice.cells.back().lines.size());
        for (const std::string& line : slice.cells.back().lines) max_chars = std::max(max_chars, line.size());
      }
    }
    slices.push_back(std::move(slice));
    for (int d = lead - 1; d >= 0 && ++prefix[d] == shape[d]; --d) prefix[d] = 0;
  }

  const int cell_w = static_cast<int>(std::ceil(max_chars * kCharWidth)) + 12;
  const int cell_h = static_cast<int>(max_lines) * kLineHeight + 10;
  const int label_w =
      rank >= 2 ? static_cast<int>(std::ceil(fmt::format("{}", rows - 1).size() * kCharWidth)) + 10 : 0;
  const int grid_x = kMargin + label_w;
  const int slice_h = (lead > 0 ? kSliceHeaderHeight : 0) + kAxisHeight + static_cast<int>(rows) * cell_h;
  // The title: the canonical text in bold, the sizes on a second line.
  const std::string text = print_layout(layout);
  const std::string sizes = fmt::format("shape=[{}] threads={} locals={}", fmt::join(shape, ", "),
                                        layout.num_threads(), layout.num_locals());
  const double title_chars = std::max(static_cast<double>(text.size()) * kTitleCharWidth / kCharWidth,
                                      static_cast<double>(sizes.size()));
  const int width = std::max(grid_x + static_cast<int>(cols) * cell_w + kMargin,
                             2 * kMargin + static_cast<int>(std::ceil(title_chars * kCharWidth)));
  const int height = kMargin + kTitleHeight + static_cast<int>(slices.size()) * (slice_h + kMargin);

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\" font-size=\"{2}\">\n",
      width, height, kFontSize);
  out += fmt::format("<title>layout {} {}</title>\n", xml_escape(text), sizes);
  out += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", width, height);
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" font-weight=\"bold\">{}</text>\n", kMargin,
                     kMargin + 12, kFontSize + 1, xml_escape(text));
  out += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#555\">{}</text>\n", kMargin, kMargin + 30, sizes);

  int y = kMargin + kTitleHeight;
  for (const Slice& slice : slices) {
    if (!slice.header.empty()) {
      out += fmt::format("<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>\n", kMargin, y + 15,
                         slice.header);
      y += kSliceHeaderHeight;
    }
    // Column indices above the grid, row indices to its left.
    if (rank >= 1) {
      for (int64_t c = 0; c < slice.cols; ++c) {
        out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n",
                           grid_x + c * cell_w + cell_w / 2, y + kAxisHeight - 5, c);
      }
    }
    y += kAxisHeight;
    for (int64_t r = 0; r < slice.rows; ++r) {
      if (rank >= 2) {
        out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#555\">{}</text>\n",
                           grid_x - 6, y + r * cell_h + cell_h / 2 + 4, r);
      }
      for (int64_t c = 0; c < slice.cols; ++c) {
        const Cell& cell = slice.cells[r * slice.cols + c];
        int x0 = grid_x + static_cast<int>(c) * cell_w;
        int y0 = y + static_cast<int>(r) * cell_h;
        std::string fill = cell.first_thread >= 0 ? thread_colour(cell.first_thread) : "#eeeeee";
        out +=
            fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#444\"/>\n",
                        x0, y0, cell_w, cell_h, fill);
        // Lines centred vertically in the cell.
        int first_baseline =
            y0 + (cell_h - static_cast<int>(cell.lines.size()) * kLineHeight) / 2 + kLineHeight - 3;
        for (size_t k = 0; k < cell.lines.size(); ++k) {
          out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x0 + cell_w / 2,
                             first_baseline + static_cast<int>(k) * kLineHeight, cell.lines[k]);
        }
      }
    }
    y += static_cast<int>(slice.rows) * cell_h + kMargin;
  }
  out += "</svg>\n";
  return out;
}

}  // namespace tilevm::layout
