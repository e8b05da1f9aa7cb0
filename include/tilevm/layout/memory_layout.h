// Layouts of tensors in memory, for one thread's view of shared and global memory.
//
// A shared layout is a register layout with T = 1 and no replication: f(0, i) is the logical index of the
// element stored at element offset i, so the offset of an element is the slot that holds it. Swizzles live
// here, to spread the rows of a tile over the 32 shared-memory banks:
//
//   swizzle(local(4, 4), dim=1)       offsets:   0  1  2  3      the element (1, 0) is stored at offset 5
//                                                5  4  7  6
//                                               10 11  8  9
//                                               15 14 13 12
//
// A global layout is either strided (row-major unless told) or, like a shared layout, a T = 1 layout.
#pragma once

#include <cstdint>
#include <optional>

#include "tilevm/layout/layout.h"

namespace tilevm::layout {

class SharedLayout {
 public:
  // tilevm::Error unless `layout` has one thread and no replication.
  explicit SharedLayout(Layout layout);

  const Layout& layout() const { return layout_; }
  const Index& shape() const { return layout_.shape(); }
  int rank() const { return layout_.rank(); }
  int64_t size() const { return layout_.num_locals(); }  // elements, which is also the storage extent
  // The element offset that stores `index`. @pre index inside shape.
  int64_t offset(const Index& index) const;
  // The logical index stored at `offset`.
  Index index_at(int64_t offset) const { return layout_.map(0, offset); }

  bool operator==(const SharedLayout&) const = default;

 private:
  Layout layout_;
};

class GlobalLayout {
 public:
  // Row-major strides over `shape`.
  static GlobalLayout row_major(const Index& shape);
  // Explicit strides in elements; tilevm::Error when the ranks differ or a stride is negative.
  static GlobalLayout strided(const Index& shape, const Index& strides);
  // A T = 1 layout (checked like SharedLayout).
  static GlobalLayout from_layout(const Layout& layout);

  const Index& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  // Strides when the layout is strided (std::nullopt for a general layout).
  const std::optional<Index>& strides() const { return strides_; }
  // The element offset of `index`. @pre index inside shape.
  int64_t offset(const Index& index) const;
  // One past the largest offset: the number of elements the memory must hold.
  int64_t extent() const;

  bool operator==(const GlobalLayout&) const = default;

 private:
  Index shape_;
  std::optional<Index> strides_;
  std::optional<SharedLayout> layout_;
};

}  // namespace tilevm::layout
