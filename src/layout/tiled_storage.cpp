// TiledStorage (tiled_storage.h): the interpreter's addressing of a tiled global view (src/interp/memory.cpp)
// on the host side, with the tile's offsets tabulated once.
#include "tilevm/layout/tiled_storage.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tilevm/layout/layout_text.h"
#include "tilevm/layout/memory_layout.h"
#include "tilevm/support/error.h"
#include "tilevm/type/packing.h"

namespace tilevm::layout {

namespace {

constexpr int64_t kMaxTileElements = int64_t{1} << 24;

}  // namespace

TiledStorage::TiledStorage(const Layout& tile, Index shape) : shape_(std::move(shape)), tile_(tile.shape()) {
  if (tile.num_threads() != 1 || tile.is_replicated())
    fail("a tiled storage layout must have one thread and no replication, but {} has {} threads{}",
         print_layout(tile), tile.num_threads(), tile.is_replicated() ? " and replicates elements" : "");
  if (tile_.size() != shape_.size())
    fail("the tile layout {} has rank {}, the tensor's shape [{}] rank {}", print_layout(tile), tile_.size(),
         fmt::join(shape_, ", "), shape_.size());
  if (tile.num_elements() > kMaxTileElements)
    fail("the tile layout {} has {} elements; at most {} are tabulated", print_layout(tile),
         tile.num_elements(), kMaxTileElements);
  int64_t tiles = 1;
  for (size_t d = 0; d < shape_.size(); ++d) {
    if (shape_[d] <= 0) fail("the tensor's shape [{}] has an extent below 1", fmt::join(shape_, ", "));
    grid_.push_back(shape_[d] / tile_[d] + (shape_[d] % tile_[d] != 0));  // no overflow near 2^63
    if (__builtin_mul_overflow(tiles, grid_.back(), &tiles))
      fail("the tiled tensor has more than 2^63 tiles");
  }
  const SharedLayout slots(tile);
  offsets_.assign(static_cast<size_t>(tile.num_elements()), 0);
  for (int64_t s = 0; s < slots.size(); ++s) {
    const Index at = slots.index_at(s);
    int64_t linear = 0;
    for (size_t d = 0; d < at.size(); ++d) linear = linear * tile_[d] + at[d];
    offsets_[static_cast<size_t>(linear)] = s;
  }
  if (__builtin_mul_overflow(tiles, tile_elements(), &size_))
    fail("the tiled tensor of shape [{}] holds more than 2^63 elements", fmt::join(shape_, ", "));
}

int64_t TiledStorage::offset(const Index& index) const {
  int64_t tile = 0, within = 0;
  for (size_t d = 0; d < shape_.size(); ++d) {
    tile = tile * grid_[d] + index[d] / tile_[d];
    within = within * tile_[d] + index[d] % tile_[d];
  }
  return tile * tile_elements() + offsets_[static_cast<size_t>(within)];
}

int64_t TiledStorage::elements() const {
  int64_t count = 1;
  for (int64_t e : shape_) count *= e;  // fits: at most size_
  return count;
}

std::vector<uint8_t> TiledStorage::pack(int bits, std::span<const uint64_t> codes) const {
  if (bits < 1 || bits > 64) fail("codes of {} bits: the widths are 1 to 64", bits);
  const int64_t count = elements();
  if (static_cast<int64_t>(codes.size()) != count)
    fail("{} codes given for a tensor of shape [{}] ({} elements)", codes.size(), fmt::join(shape_, ", "),
         count);
  std::vector<uint8_t> out(static_cast<size_t>(packed_bytes(bits, size_)), 0);
  const uint64_t limit = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  for_each_element([&](int64_t k, const Index& index) {
    const uint64_t code = codes[static_cast<size_t>(k)];
    if (code > limit)
      fail("code {} of element [{}] does not fit in {} bits", code, fmt::join(index, ", "), bits);
    set_code(out.data(), bits, offset(index), code);
  });
  return out;
}

std::vector<uint64_t> TiledStorage::unpack(int bits, std::span<const uint8_t> bytes) const {
  if (bits < 1 || bits > 64) fail("codes of {} bits: the widths are 1 to 64", bits);
  const int64_t need = packed_bytes(bits, size_);
  if (static_cast<int64_t>(bytes.size()) < need)
    fail("{} bytes given for a tiled tensor of shape [{}] that takes {} ({} tiles of {} {}-bit elements)",
         bytes.size(), fmt::join(shape_, ", "), need, size_ / tile_elements(), tile_elements(), bits);
  std::vector<uint64_t> codes;
  for_each_element(
      [&](int64_t, const Index& index) { codes.push_back(get_code(bytes.data(), bits, offset(index))); });
  return codes;
}

void TiledStorage::for_each_element(const std::function<void(int64_t, const Index&)>& fn) const {
  Index index(shape_.size(), 0);
  for (int64_t k = 0, count = elements(); k < count; ++k) {
    fn(k, index);
    for (size_t d = shape_.size(); d-- > 0;) {  // the next index, row-major
      if (++index[d] < shape_[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace tilevm::layout
