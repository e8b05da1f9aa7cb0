// The mode form of a register layout: the representation every layout without a swizzle has.
//
// Each dimension of the tile is split into modes (mixed-radix digits, outer first). Every mode is a digit
// of the thread index (a spatial mode) or of the local index (a local mode). Replication is a spatial
// digit that names no dimension: threads that differ only in it hold the same elements.
//
//   local(2,1).spatial(8,4).local(1,2)       shape [16, 8], T = 32, m = 4
//
//   mode:        0        1        2        3
//   dim:         0        0        1        1
//   size:        2        8        4        2
//   role:      local    spatial  spatial   local
//
//   spatial_modes = [1, 2]   t = 4 * digit(mode 1) + digit(mode 2)
//   local_modes   = [0, 3]   i = 2 * digit(mode 0) + digit(mode 3)
//   row index = 8 * digit(mode 0) + digit(mode 1), column index = 2 * digit(mode 2) + digit(mode 3)
//
// So thread 5, slot 3 holds element (8*1 + 1, 2*1 + 1) = (9, 3).
//
// The canonical form drops size-1 modes and merges two modes that are neighbours in their dimension
// (outer directly before inner) and neighbours, in the same order, in the same list; neighbouring
// replications merge too. Two mode layouts map every (t, i) alike iff their canonical forms are equal,
// which the property tests in tests/unit/layout_laws_test.cpp check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tilevm::layout {

using Index = std::vector<int64_t>;

struct ModeLayout {
  Index shape;                     // the tile's shape, rank r (may be 0)
  std::vector<int64_t> mode_size;  // every mode's extent, grouped by dimension, outer to inner
  std::vector<int> mode_dim;       // the dimension each mode splits (non-decreasing)
  // Thread digits, outer to inner: a mode index >= 0, or -k for a replication of extent k (k >= 2).
  std::vector<int64_t> spatial;
  std::vector<int64_t> local;  // local digits, outer to inner: mode indices

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t num_threads() const;
  int64_t num_locals() const;

  // f(t, i): the logical index thread t holds in its slot i. @pre 0 <= t < T, 0 <= i < m.
  Index map(int64_t t, int64_t i) const;
  // Every (t, i) that holds `index`, t-major. @pre index inside shape.
  std::vector<std::pair<int64_t, int64_t>> owners(const Index& index) const;

  bool operator==(const ModeLayout&) const = default;
};

// Builds a mode layout from its four fields (shape, mode_shape, spatial_modes, local_modes), checking them;
// throws tilevm::Error with the offending values when they do not describe a layout.
ModeLayout make_mode_layout(const Index& shape, const std::vector<int64_t>& mode_shape,
                            const std::vector<int64_t>& spatial_modes,
                            const std::vector<int64_t>& local_modes);

// The canonical form (see above). Idempotent.
ModeLayout canonicalize(ModeLayout layout);

// Prepends size-1 dimensions up to `rank`. @pre rank >= layout.rank().
ModeLayout broadcast(const ModeLayout& layout, int rank);

// Kronecker product (f outer, g inner) after broadcasting to the larger rank; canonical.
ModeLayout compose(const ModeLayout& f, const ModeLayout& g);

// The f with compose(f, g) == h, or tilevm::Error naming why none exists.
ModeLayout divide(const ModeLayout& h, const ModeLayout& g);

// Removes dimensions `dims` from the logical index: their local digits vanish (slots merge), their spatial
// digits become replication. @pre every dim in range, no duplicates (checked: tilevm::Error).
ModeLayout reduce(const ModeLayout& layout, const std::vector<int>& dims);

// Inserts a dimension of extent 1 at position `dim` (0 <= dim <= rank, checked).
ModeLayout insert_dim(const ModeLayout& layout, int dim);

// The same layout with its dimensions reordered: dimension d of the result is dimension perm[d] of
// `layout`, slot for slot and thread for thread (f'(t, i) = f(t, i) permuted). Canonical. @throws
// tilevm::Error unless perm is a permutation of 0 .. rank-1.
ModeLayout permute_dims(const ModeLayout& layout, const std::vector<int>& perm);

// The primitives of docs/language.md section 3. Extents must be >= 1 (checked).
ModeLayout local_layout(const Index& extents);
ModeLayout spatial_layout(const Index& extents);
ModeLayout column_local_layout(const Index& extents);
ModeLayout column_spatial_layout(const Index& extents);
// Rank 0, T = n, m = 1: n threads holding the same (empty-index) element; broadcasts under composition.
ModeLayout replicate_layout(int64_t n);

}  // namespace tilevm::layout
