#include "tilevm/target/tma_swizzle.h"

#include <mutex>
#include <string>
#include <unordered_map>

#include "tilevm/layout/layout_text.h"
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

// The verifier asks this for every CopyTma after every pass, and a layout that is the swizzled form by
// another factoring (the tile layer's swizzle(local(R, 8)) against local(R / 8, 1).swizzle(local(8, 8)))
// is compared element by element: remembered by its text, so that each layout is enumerated once per
// process (the fuzzer's sanitizer build took seconds per program without it).
int tma_swizzle_bytes(const layout::Layout& lay, int elem_bits) {
  static std::mutex mutex;
  static std::unordered_map<std::string, int> known;
  const std::string key = layout::print_layout(lay) + "/" + std::to_string(elem_bits);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  const int bytes = compute_swizzle_bytes(lay, elem_bits);
  std::lock_guard<std::mutex> lock(mutex);
  if (known.size() >= 4096) known.clear();  // bounded: a long-running process sees many layouts
  known.emplace(key, bytes);
  return bytes;
}

}  // namespace tilevm::target
