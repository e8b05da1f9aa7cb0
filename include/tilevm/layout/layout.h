// A register layout: which thread holds which element of a tile, and in which of its register slots.
//
// A layout f maps a thread index t (0 <= t < T) and a local slot i (0 <= i < m) to the logical index of the
// element that thread t keeps in slot i (docs/language.md section 3). Layouts are built from primitives and
// combined by the Kronecker product f.g, where f says how the blocks are arranged and g what is inside one:
//
//   spatial(2, 2)          local(1, 2)            spatial(2, 2).local(1, 2)       (cells: t:i)
//   +-----+-----+          +-----+-----+          +-----+-----+-----+-----+
//   | 0:0 | 1:0 |          | 0:0 | 0:1 |          | 0:0 | 0:1 | 1:0 | 1:1 |
//   +-----+-----+          +-----+-----+          +-----+-----+-----+-----+
//   | 2:0 | 3:0 |                                 | 2:0 | 2:1 | 3:0 | 3:1 |
//   +-----+-----+                                 +-----+-----+-----+-----+
//
// A Layout is a value: a product of factors, each a ModeLayout or a swizzle of another layout. Adjacent mode
// factors are always merged, so a layout without a swizzle is a single canonical ModeLayout; equality is by
// mapping. Shared and global layouts are layouts with T = 1 (see memory_layout.h).
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tilevm/layout/mode_layout.h"

namespace tilevm::layout {

class Layout;

// swizzle(inner, dim=d, log_step=s) on a rank-2 inner layout: the logical index (i, j) becomes
// (i, j ^ ((i >> s) % n_j)) for d = 1 and (i ^ ((j >> s) % n_i), j) for d = 0.
struct Swizzle {
  std::shared_ptr<const Layout> inner;
  int dim = 1;
  int log_step = 0;
};

class Layout {
 public:
  struct Factor {
    // Exactly one is set: a mode factor (broadcast to the layout's rank) or a swizzle (of its own rank,
    // broadcast when evaluated).
    std::shared_ptr<const ModeLayout> modes;
    std::shared_ptr<const Swizzle> swizzle;
  };

  Layout();                  // local(1): the identity
  Layout(ModeLayout modes);  // NOLINT: a mode layout is a layout

  const Index& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t num_threads() const { return num_threads_; }
  int64_t num_locals() const { return num_locals_; }
  int64_t num_elements() const;  // product of the shape
  const std::vector<Factor>& factors() const { return factors_; }

  // The mode form, when the layout has no swizzle (nullptr otherwise).
  const ModeLayout* mode_form() const;
  bool has_swizzle() const { return mode_form() == nullptr; }
  // True when some element is held by more than one (t, i).
  bool is_replicated() const;

  // f(t, i). @pre 0 <= t < T, 0 <= i < m (internal assert).
  Index map(int64_t t, int64_t i) const;
  // Every (t, i) holding `index`, t-major then i. @pre index within shape (internal assert).
  std::vector<std::pair<int64_t, int64_t>> owners(const Index& index) const;

  // Equality by mapping: same shape, T, m and f(t, i) for every (t, i).
  bool operator==(const Layout& other) const;

  // Kronecker product with rank broadcast.
  friend Layout compose(const Layout& f, const Layout& g);

 private:
  explicit Layout(std::vector<Factor> factors, int rank);
  void finish();

  std::vector<Factor> factors_;  // outer to inner
  Index shape_;
  int64_t num_threads_ = 1;
  int64_t num_locals_ = 1;

  friend Layout make_swizzle(const Layout&, int, int);
  friend Layout reduce(const Layout&, const std::vector<int>&);
  friend Layout divide(const Layout&, const Layout&);
  friend Layout insert_dim(const Layout&, int);
};

// The row-major offset in f's shape of f(t, i) for every (t, i), at [t * m + i]: what code that tabulates a
// whole layout needs, in one pass over small per-factor tables instead of an allocating map per element.
std::vector<int64_t> row_major_offsets(const Layout& f);

// f.g: h(t, i) = f(t / T_g, i / m_g) * S_g + g(t % T_g, i % m_g), ranks broadcast by prepending 1s.
Layout compose(const Layout& f, const Layout& g);
// The f with compose(f, g) == h; tilevm::Error (naming the shapes and the reason) when there is none.
Layout divide(const Layout& h, const Layout& g);
// Removes dimensions `dims` from the logical index (see ModeLayout reduce); tilevm::Error on a bad dim or a
// swizzled dimension.
Layout reduce(const Layout& layout, const std::vector<int>& dims);
// Inserts a dimension of extent 1 at position `dim` (what keepdim leaves after a reduction); tilevm::Error
// when dim is out of range or falls inside a swizzled factor's dimensions.
Layout insert_dim(const Layout& layout, int dim);
// The layout with its dimensions reordered (mode_layout.h's permute_dims); transpose swaps the two of a
// rank-2 layout. @throws tilevm::Error for a swizzled layout or a bad permutation.
Layout permute_dims(const Layout& layout, const std::vector<int>& perm);
Layout transpose(const Layout& layout);
// The one-thread (memory) layout that stores f's elements thread after thread, each thread's slots in slot
// order: element f(t, i) at offset t * m + i. Weights stored so (and copied whole into a shared tile of this
// layout) reach the threads of f as runs of consecutive words. @throws tilevm::Error for a swizzled or
// replicated f.
Layout thread_major(const Layout& f);
// The same in chunks of `chunk` slots: chunk c of every thread (its slots c * chunk .. c * chunk + chunk - 1)
// before chunk c + 1 of any, so that a warp reading one chunk per thread reads consecutive memory (no bank
// conflicts for 16-byte chunks). thread_major(f) is chunk = m. @throws tilevm::Error unless chunk divides m
// and is a product of the innermost slot extents (one of them may split).
Layout thread_major(const Layout& f, int64_t chunk);
// f over the threads that hold the first copy of each element: its replication digits removed (fewer threads
// where f replicates; f itself where it does not). Each element keeps its slot. What a memory order derived
// from a replicated reader is built on (tile/infer_layouts.cpp, layout=auto): the other copies' threads read
// the same addresses. @throws tilevm::Error for a swizzled f.
Layout drop_replication(const Layout& f);
// swizzle(f, dim=d, log_step=s); tilevm::Error unless f has rank 2, d is 0 or 1, s >= 0 and the extent of
// dimension d is a power of two. A swizzle that moves nothing returns f itself.
Layout make_swizzle(const Layout& f, int dim, int log_step = 0);

// Primitives (docs/language.md section 3); `repeat` is `local`.
Layout local(const Index& extents);
Layout spatial(const Index& extents);
Layout column_local(const Index& extents);
Layout column_spatial(const Index& extents);
Layout replicate(int64_t n);

// Chains in C++ as they read in the text: `local(2, 1).spatial(8, 4).local(1, 2)` is
//   local(2, 1) * spatial(8, 4) * local(1, 2)      or      compose(local(2, 1), spatial(8, 4), local(1, 2))
// The product is associative; both group to the left, as the text does.
inline Layout operator*(const Layout& f, const Layout& g) {
  return compose(f, g);
}

template <std::convertible_to<const Layout&>... Rest>
Layout compose(const Layout& f, const Layout& g, const Layout& h, const Rest&... rest) {
  Layout out = compose(compose(f, g), h);
  ((out = compose(out, rest)), ...);
  return out;
}

// The primitives with their extents as arguments: local(2, 1) is local({2, 1}).
template <std::integral... E>
requires(sizeof...(E) > 0) Layout local(E... extents) {
  return local(Index{static_cast<int64_t>(extents)...});
}
template <std::integral... E>
requires(sizeof...(E) > 0) Layout spatial(E... extents) {
  return spatial(Index{static_cast<int64_t>(extents)...});
}
template <std::integral... E>
requires(sizeof...(E) > 0) Layout column_local(E... extents) {
  return column_local(Index{static_cast<int64_t>(extents)...});
}
template <std::integral... E>
requires(sizeof...(E) > 0) Layout column_spatial(E... extents) {
  return column_spatial(Index{static_cast<int64_t>(extents)...});
}

}  // namespace tilevm::layout
