#include "tilevm/layout/memory_layout.h"

#include <fmt/ranges.h>

#include "tilevm/support/error.h"

namespace tilevm::layout {

SharedLayout::SharedLayout(Layout layout) : layout_(std::move(layout)) {
  if (layout_.num_threads() != 1) {
    fail("a memory layout must have one thread, but this one has {}", layout_.num_threads());
  }
  if (layout_.is_replicated()) fail("a memory layout must not replicate elements");
}

int64_t SharedLayout::offset(const Index& index) const {
  auto owners = layout_.owners(index);
  TILEVM_ASSERT(owners.size() == 1, "element [{}] stored {} times", fmt::join(index, ", "), owners.size());
  return owners[0].second;
}

GlobalLayout GlobalLayout::row_major(const Index& shape) {
  Index strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strided(shape, strides);
}

GlobalLayout GlobalLayout::strided(const Index& shape, const Index& strides) {
  if (shape.size() != strides.size()) {
    fail("strides [{}] do not match shape [{}]: rank {} vs {}", fmt::join(strides, ", "),
         fmt::join(shape, ", "), strides.size(), shape.size());
  }
  for (int64_t e : shape)
    if (e < 0) fail("shape [{}] has a negative extent", fmt::join(shape, ", "));
  for (int64_t s : strides)
    if (s < 0) fail("strides [{}] have a negative stride", fmt::join(strides, ", "));
  GlobalLayout out;
  out.shape_ = shape;
  out.strides_ = strides;
  return out;
}

GlobalLayout GlobalLayout::from_layout(const Layout& layout) {
  GlobalLayout out;
  out.shape_ = layout.shape();
  out.layout_ = SharedLayout(layout);
  return out;
}

int64_t GlobalLayout::offset(const Index& index) const {
  if (layout_) return layout_->offset(index);
  int64_t off = 0;
  for (size_t d = 0; d < index.size(); ++d) off += index[d] * (*strides_)[d];
  return off;
}

int64_t GlobalLayout::extent() const {
  if (layout_) return layout_->size();
  int64_t last = 0;
  for (size_t d = 0; d < shape_.size(); ++d) {
    if (shape_[d] == 0) return 0;
    last += (shape_[d] - 1) * (*strides_)[d];
  }
  return last + 1;
}

}  // namespace tilevm::layout
