// Division of mode layouts: h / g is the f with f.g == h.
//
// In f.g every dimension, the thread list and the local list hold f's digits outside g's. So h divides by g
// iff cutting each of them at g's extent (shape_g[d], T_g, m_g, counted from the inner end) cuts every mode
// in the same place in its dimension and in its list; the inner pieces must then form g, and the outer
// pieces are f. Example: local(2, 4) / local(1, 2): h has modes 2 (dim 0) and 4 (dim 1), local list [0, 1];
// cutting dim 1 at 2 and the local list at m_g = 2 both split mode 1 into 2 x 2, so f = local(2, 2).
#include <fmt/ranges.h>

#include "tilevm/layout/mode_layout.h"
#include "tilevm/support/error.h"

namespace tilevm::layout {
namespace {

// Walks `entries` (outer first) from the inner end and gives each the extent of its piece that falls inside
// the inner `extent`. Returns false when the cut does not fall on a divisor of a mode.
bool cut(const std::vector<int64_t>& sizes, int64_t extent, std::vector<int64_t>& inner_piece) {
  inner_piece.assign(sizes.size(), 1);
  int64_t remaining = extent;
  for (size_t k = sizes.size(); k-- > 0 && remaining > 1;) {
    int64_t s = sizes[k];
    if (remaining % s == 0) {
      inner_piece[k] = s;
      remaining /= s;
    } else if (s % remaining == 0) {
      inner_piece[k] = remaining;
      remaining = 1;
    } else {
      return false;
    }
  }
  return remaining == 1;
}

}  // namespace

ModeLayout divide(const ModeLayout& h, const ModeLayout& g_in) {
  auto describe = [&](const std::string& why) {
    return fmt::format(
        "cannot divide a layout of shape [{}] (T={}, m={}) by one of shape [{}] (T={}, m={}): {}",
        fmt::join(h.shape, ", "), h.num_threads(), h.num_locals(), fmt::join(g_in.shape, ", "),
        g_in.num_threads(), g_in.num_locals(), why);
  };
  if (g_in.rank() > h.rank()) throw Error(describe("the divisor has the higher rank"));
  ModeLayout g = broadcast(g_in, h.rank());
  for (int d = 0; d < h.rank(); ++d) {
    if (h.shape[d] % g.shape[d] != 0) {
      throw Error(describe(
          fmt::format("extent {} of dimension {} is not a multiple of {}", h.shape[d], d, g.shape[d])));
    }
  }
  if (h.num_threads() % g.num_threads() != 0) throw Error(describe("the thread counts do not divide"));
  if (h.num_locals() % g.num_locals() != 0) throw Error(describe("the local counts do not divide"));

  const size_t n = h.mode_size.size();
  // The inner piece of every mode as its dimension sees it...
  std::vector<int64_t> dim_piece(n, 1);
  for (int d = 0; d < h.rank(); ++d) {
    std::vector<int64_t> sizes, piece;
    std::vector<size_t> modes;
    for (size_t m = 0; m < n; ++m) {
      if (h.mode_dim[m] == d) {
        sizes.push_back(h.mode_size[m]);
        modes.push_back(m);
      }
    }
    if (!cut(sizes, g.shape[d], piece)) {
      throw Error(describe(fmt::format("dimension {} cannot be cut at extent {}", d, g.shape[d])));
    }
    for (size_t k = 0; k < modes.size(); ++k) dim_piece[modes[k]] = piece[k];
  }
  // ...and as its list (thread or local) sees it; a replication has only the list's view.
  std::vector<int64_t> list_piece(n, 1);
  std::vector<int64_t> spatial_piece;
  auto list_sizes = [&](const std::vector<int64_t>& list) {
    std::vector<int64_t> sizes;
    for (int64_t e : list) sizes.push_back(e >= 0 ? h.mode_size[e] : -e);
    return sizes;
  };
  if (!cut(list_sizes(h.spatial), g.num_threads(), spatial_piece)) {
    throw Error(describe(fmt::format("the threads cannot be cut at {}", g.num_threads())));
  }
  std::vector<int64_t> local_piece;
  if (!cut(list_sizes(h.local), g.num_locals(), local_piece)) {
    throw Error(describe(fmt::format("the local slots cannot be cut at {}", g.num_locals())));
  }
  for (size_t k = 0; k < h.spatial.size(); ++k) {
    if (h.spatial[k] >= 0) list_piece[h.spatial[k]] = spatial_piece[k];
  }
  for (size_t k = 0; k < h.local.size(); ++k) list_piece[h.local[k]] = local_piece[k];
  for (size_t m = 0; m < n; ++m) {
    if (dim_piece[m] != list_piece[m]) {
      throw Error(describe(
          fmt::format("a mode of extent {} in dimension {} would be split at {} by the shape and at "
                      "{} by the {} order",
                      h.mode_size[m], h.mode_dim[m], dim_piece[m], list_piece[m], "thread or local")));
    }
  }
  // Mode m becomes an outer mode 2m (extent size / piece, in f) and an inner mode 2m + 1 (extent piece, in
  // g).
  auto build = [&](bool inner) {
    ModeLayout out;
    out.shape.resize(h.rank());
    for (int d = 0; d < h.rank(); ++d) out.shape[d] = inner ? g.shape[d] : h.shape[d] / g.shape[d];
    for (size_t m = 0; m < n; ++m) {
      out.mode_size.push_back(inner ? dim_piece[m] : h.mode_size[m] / dim_piece[m]);
      out.mode_dim.push_back(h.mode_dim[m]);
    }
    for (size_t k = 0; k < h.spatial.size(); ++k) {
      int64_t e = h.spatial[k];
      if (e >= 0) {
        out.spatial.push_back(e);
      } else {
        int64_t extent = inner ? spatial_piece[k] : -e / spatial_piece[k];
        out.spatial.push_back(-extent);  // -1 (no replication) is dropped by canonicalize
      }
    }
    out.local = h.local;
    return canonicalize(std::move(out));
  };
  ModeLayout f = build(false);
  ModeLayout inner = build(true);
  if (!(inner == canonicalize(g))) {
    throw Error(
        describe("its inner part is not the divisor (the modes match in size but not in role or order)"));
  }
  return f;
}

}  // namespace tilevm::layout
