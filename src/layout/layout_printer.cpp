// print_layout: the canonical text of a layout.
//
// A Layout is a product of factors; each prints on its own and the texts are joined with '.'. A swizzle
// factor prints as swizzle(<inner>, dim=d[, log_step=s]). A mode factor is canonical already, so any
// deterministic function of it is a canonical text; the one chosen reads like what a person writes. It peels
// primitives off the outside of the factor: a primitive's modes are the outermost remaining modes of their
// dimensions and its digits the heads of the remaining spatial or local list, so composing the printed
// primitives rebuilds the factor exactly.
//
//   local(2,1).spatial(8,4).local(1,2)     modes d0:2(L) d0:8(S) d1:4(S) d1:2(L)
//     local head d0:2 is outermost in d0; the next local entry d1:2 is not (d1:4 is)   -> local(2, 1)
//     local head d1:2 is not outermost; spatial head d0:8 is, then d1:4 (dims rising)  -> spatial(8, 4)
//     local head d1:2 is outermost now                                                 -> local(1, 2)
//
// When neither head can be taken the factor is not a chain of primitives and prints whole as
// register_layout(shape=[...], mode_shape=[...], spatial_modes=[...], local_modes=[...]).
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tilevm/layout/layout.h"
#include "tilevm/layout/layout_text.h"

namespace tilevm::layout {
namespace {

std::string join(const std::vector<int64_t>& values) {
  return fmt::format("{}", fmt::join(values, ", "));
}

std::string register_layout_text(const ModeLayout& layout) {
  return fmt::format("register_layout(shape=[{}], mode_shape=[{}], spatial_modes=[{}], local_modes=[{}])",
                     join(layout.shape), join(layout.mode_size), join(layout.spatial), join(layout.local));
}

// Peels primitives off a canonical mode layout (see the file comment).
class ModePrinter {
 public:
  explicit ModePrinter(const ModeLayout& layout) : layout_(layout), next_(layout.rank(), -1) {
    // Modes are grouped by dimension, outer first: the first mode of each dimension is its outermost.
    for (int m = static_cast<int>(layout.mode_dim.size()) - 1; m >= 0; --m) next_[layout.mode_dim[m]] = m;
  }

  std::string print() {
    std::vector<std::string> parts;
    size_t spatial = 0;
    size_t local = 0;
    while (spatial < layout_.spatial.size() || local < layout_.local.size()) {
      if (local < layout_.local.size() && is_outermost(layout_.local[local])) {
        parts.push_back(take_run(layout_.local, local, "local", "column_local"));
      } else if (spatial < layout_.spatial.size() && layout_.spatial[spatial] < 0) {
        parts.push_back(fmt::format("replicate({})", -layout_.spatial[spatial]));
        ++spatial;
      } else if (spatial < layout_.spatial.size() && is_outermost(layout_.spatial[spatial])) {
        parts.push_back(take_run(layout_.spatial, spatial, "spatial", "column_spatial"));
      } else {
        return register_layout_text(layout_);
      }
    }
    return fmt::format("{}", fmt::join(parts, "."));
  }

 private:
  // A replication (negative entry) is never the outermost mode of a dimension.
  bool is_outermost(int64_t entry) const { return entry >= 0 && next_[layout_.mode_dim[entry]] == entry; }

  // The length of the run from list[head] of entries that are outermost in their dimension, with dimensions
  // strictly rising (step +1) or falling (step -1). Dimensions differ within a run, so taking one entry of it
  // does not change whether another is outermost.
  size_t run_length(const std::vector<int64_t>& list, size_t head, int step) const {
    size_t end = head + 1;
    while (end < list.size() && is_outermost(list[end]) &&
           (layout_.mode_dim[list[end]] - layout_.mode_dim[list[end - 1]]) * step > 0) {
      ++end;
    }
    return end - head;
  }

  // Takes the longer run from list[head] (row-major on a tie) and prints it as one primitive.
  std::string take_run(const std::vector<int64_t>& list, size_t& head, const char* row_major,
                       const char* column_major) {
    size_t rising = run_length(list, head, +1);
    size_t falling = run_length(list, head, -1);
    size_t length = rising >= falling ? rising : falling;
    std::vector<int64_t> extents(layout_.rank(), 1);
    for (size_t k = head; k < head + length; ++k) {
      int mode = static_cast<int>(list[k]);
      extents[layout_.mode_dim[mode]] = layout_.mode_size[mode];
      ++next_[layout_.mode_dim[mode]];
    }
    head += length;
    return fmt::format("{}({})", rising >= falling ? row_major : column_major, join(extents));
  }

  const ModeLayout& layout_;
  std::vector<int> next_;  // per dimension: its outermost mode not printed yet
};

// Whether a mode factor's text fixes the rank: everything but a chain of replicate(n) does.
bool has_rank(const std::string& text) {
  for (size_t at = 0; at < text.size();) {
    if (text.compare(at, 10, "replicate(") != 0) return true;
    at = text.find(')', at);
    at = at == std::string::npos ? text.size() : at + 2;  // past ")."
  }
  return false;
}

std::string print_swizzle(const Swizzle& swizzle) {
  std::string text = fmt::format("swizzle({}, dim={}", print_layout(*swizzle.inner), swizzle.dim);
  if (swizzle.log_step != 0) text += fmt::format(", log_step={}", swizzle.log_step);
  return text + ")";
}

}  // namespace

std::string print_layout(const Layout& layout) {
  std::vector<std::string> parts;
  // The rank the text shows: primitives and register_layout show the layout's rank, a swizzle 2 (or its
  // inner's rank), replicate(n) none. When the text shows less, local(1, ..., 1) is put in front.
  int shown_rank = 0;
  for (const Layout::Factor& factor : layout.factors()) {
    if (factor.swizzle) {
      parts.push_back(print_swizzle(*factor.swizzle));
      shown_rank = std::max(shown_rank, factor.swizzle->inner->rank());
    } else {
      // Mode factors are stored canonical at the layout's rank; normalizing again costs little and keeps the
      // text canonical even if that ever changes.
      ModeLayout modes = *factor.modes;
      if (modes.rank() < layout.rank()) modes = broadcast(modes, layout.rank());
      std::string text = ModePrinter(canonicalize(std::move(modes))).print();
      if (!text.empty()) parts.push_back(text);
      if (has_rank(text)) shown_rank = layout.rank();
    }
  }
  if (shown_rank < layout.rank() || parts.empty()) {
    parts.insert(parts.begin(), fmt::format("local({})", join(std::vector<int64_t>(layout.rank(), 1))));
  }
  return fmt::format("{}", fmt::join(parts, "."));
}

}  // namespace tilevm::layout
