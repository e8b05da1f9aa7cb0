#include "tilevm/target/tma_swizzle.h"

#include "layout_memo.h"
#include "tilevm/support/error.h"
#include "tilevm/target/limits.h"
#include "tilevm/target/wgmma.h"

namespace tilevm::target {

namespace {

int compute_swizzle_bytes(const layout::Layout& lay, int elem_bits) {
  const layout::Index& shape = lay.shape();
  // The comparisons below map every element; a tensor larger than shared memory has no form.
  if (lay.num_threads() != 1 || shape.empty() || !fits_shared(lay.num_locals(), elem_bits)) return -1;
  if (lay == layout::local(shape)) return 0;
  const int rank = lay.rank();
  if (rank < 2) return -1;
  const int64_t rows = shape[static_cast<size_t>(rank - 2)], cols = shape[static_cast<size_t>(rank - 1)];
  const int64_t row_bits = cols * elem_bits;
  for (int s : {32, 64, 128}) {
    if (row_bits != s * 8 || rows % 8 != 0) continue;
    layout::Index lead(shape.begin(), shape.end() - 2);
    lead.push_back(1);
    lead.push_back(1);
    try {
      if (lay == layout::compose(layout::local(lead), wgmma_swizzled_tile(rows, cols, elem_bits, s)))
        return s;
    } catch (const Error&) {
    }
  }
  return -1;
}

}  // namespace

int tma_swizzle_bytes(const layout::Layout& lay, int elem_bits) {
  static LayoutMemo<int> memo;  // layout_memo.h: why
  return memo.get(lay, elem_bits, compute_swizzle_bytes);
}

}  // namespace tilevm::target
