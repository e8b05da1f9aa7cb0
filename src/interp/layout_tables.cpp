// Flat tables built once per layout, so that the hot loops of the interpreter never call Layout::map.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "machine.h"
#include "tilevm/support/error.h"

namespace tilevm::interp::detail {

std::string format_index(const Index& index) {
  return fmt::format("[{}]", fmt::join(index, ", "));
}

Index unravel(int64_t linear, const Index& shape) {
  Index out(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    out[d] = linear % shape[d];
    linear /= shape[d];
  }
  return out;
}

namespace {

int64_t linearize(const Index& index, const Index& shape) {
  int64_t l = 0;
  for (size_t d = 0; d < shape.size(); ++d) l = l * shape[d] + index[d];
  return l;
}

std::unique_ptr<LayoutTable> build_table(const layout::Layout& lay) {
  auto t = std::make_unique<LayoutTable>();
  t->layout = lay;
  t->shape = lay.shape();
  t->threads = lay.num_threads();
  t->locals = lay.num_locals();
  t->elements = lay.num_elements();
  if (t->threads * t->locals > (int64_t{1} << 28)) {
    fail("layout with {} threads and {} locals is too large for the interpreter", t->threads, t->locals);
  }
  t->lin.resize(static_cast<size_t>(t->threads * t->locals));
  for (int64_t th = 0; th < t->threads; ++th) {
    for (int64_t i = 0; i < t->locals; ++i) {
      t->lin[static_cast<size_t>(th * t->locals + i)] =
          static_cast<int32_t>(linearize(lay.map(th, i), t->shape));
    }
  }
  return t;
}

}  // namespace

const std::vector<int32_t>& LayoutTable::slots() const {
  if (slot_of.empty() && threads * elements > 0) {
    slot_of.assign(static_cast<size_t>(threads * elements), -1);
    for (int64_t th = 0; th < threads; ++th) {
      for (int64_t i = 0; i < locals; ++i) {
        int32_t l = lin[static_cast<size_t>(th * locals + i)];
        int32_t& s = slot_of[static_cast<size_t>(th * elements + l)];
        if (s < 0) s = static_cast<int32_t>(i);
      }
    }
  }
  return slot_of;
}

const LayoutTable& LayoutCache::get(const layout::Layout& lay) {
  auto it = by_address_.find(&lay);
  if (it != by_address_.end()) return *it->second;
  for (const auto& t : tables_) {
    if (t->shape == lay.shape() && t->threads == lay.num_threads() && t->locals == lay.num_locals() &&
        t->layout == lay) {
      by_address_.emplace(&lay, t.get());
      return *t;
    }
  }
  tables_.push_back(build_table(lay));
  by_address_.emplace(&lay, tables_.back().get());
  return *tables_.back();
}

const LayoutTable& LayoutCache::get_memory(const layout::Layout& lay) {
  const LayoutTable& t = get(lay);
  if (t.is_memory_layout()) return t;
  if (t.threads != 1) fail("a memory layout must have one thread, but this one has {}", t.threads);
  if (t.locals != t.elements) fail("a memory layout must not replicate elements");
  auto& table = const_cast<LayoutTable&>(t);
  table.offset_of.assign(static_cast<size_t>(t.elements), -1);
  for (int64_t i = 0; i < t.locals; ++i) {
    int64_t& slot = table.offset_of[static_cast<size_t>(t.lin[static_cast<size_t>(i)])];
    if (slot >= 0) fail("a memory layout must not replicate elements");
    slot = i;
  }
  return t;
}

}  // namespace tilevm::interp::detail
