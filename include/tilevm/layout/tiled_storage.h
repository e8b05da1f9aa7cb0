// Where a tensor stored in tiles of a layout keeps each element: the host's half of a tiled global view
// (`ViewGlobal(ptr, shape=S, layout=L)`, docs/language.md section 3), so that a host can write weights in
// the order a kernel reads them.
//
// The tensor is a row-major grid of ceil(S_d / L_d) tiles, each stored whole as a run of L's m elements in
// L's order (L has one thread and no replication: the offset of an element in its tile is the slot that
// holds it). With S = [3, 4] and L = local(2, 2), row-major tiles of 2 x 2:
//
//   offsets of the elements        a grid of 2 x 2 tiles of 4 elements: 16 elements are stored, of
//   0  1 |  4  5                   which 4 (row 3, past the shape) are padding
//   2  3 |  6  7
//   8  9 | 12 13
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tilevm/layout/layout.h"

namespace tilevm::layout {

class TiledStorage {
 public:
  // tilevm::Error unless `tile` has one thread, no replication and the rank of `shape`, every extent of
  // `shape` is positive, and the tile has at most 2^24 elements (the table of its offsets is built here).
  TiledStorage(const Layout& tile, Index shape);

  const Index& shape() const { return shape_; }
  const Index& grid() const { return grid_; }  // tiles along each dimension
  int64_t tile_elements() const { return static_cast<int64_t>(offsets_.size()); }
  int64_t elements() const;  // the tensor's, the product of shape
  // Elements the memory holds: every tile whole, the edge tiles' padding included.
  int64_t size() const { return size_; }
  // The element offset of `index`. @pre index inside shape.
  int64_t offset(const Index& index) const;

  // The bytes of the storage (a packed stream of `bits`-bit codes: type/packing.h) holding the tensor's
  // codes, given in row-major order, one per element of shape; the padding of the edge tiles is 0.
  // tilevm::Error when the count is not the shape's or a code does not fit in `bits`.
  std::vector<uint8_t> pack(int bits, std::span<const uint64_t> codes) const;
  // pack's inverse: the codes of the tensor's elements in row-major order, read from the storage's bytes
  // (`tilevm run --pack`'s --out). tilevm::Error when `bytes` is shorter than the storage.
  std::vector<uint64_t> unpack(int bits, std::span<const uint8_t> bytes) const;

 private:
  // fn(k, index) for the k-th element in row-major order.
  void for_each_element(const std::function<void(int64_t, const Index&)>& fn) const;

  Index shape_, tile_, grid_;
  std::vector<int64_t> offsets_;  // the storage offset of each element of a tile, row-major
  int64_t size_ = 0;
};

}  // namespace tilevm::layout
