// The tile layer's layout formulas (tile_layouts.h).
#include "tilevm/tile/tile_layouts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>

#include "tilevm/support/error.h"
#include "tilevm/target/atoms.h"
#include "tilevm/target/limits.h"
#include "tilevm/target/tma_swizzle.h"
#include "tilevm/target/wgmma.h"

namespace tilevm::tile {

namespace {

// mma.m16n8k16 with f16 inputs: its A, B and C fragments are those of every Gemm the tile layer lowers (the
// bf16 atom has the same fragments).
const target::MmaAtom& gemm_atom() {
  for (const target::MmaAtom& a : target::mma_atoms())
    if (a.m == 16 && a.n == 8 && a.k == 16 && a.a == DataType::f16()) return a;
  throw InternalError("target::mma_atoms() has no m16n8k16 f16 atom");
}

}  // namespace

std::optional<WarpPartition> gemm_warp_partition(int64_t m, int64_t n, int64_t warps, std::string* why) {
  std::optional<WarpPartition> best;
  for (int64_t wm = warps; wm >= 1; --wm) {
    if (warps % wm != 0) continue;
    const int64_t wn = warps / wm;
    if (m % (16 * wm) != 0 || n % (8 * wn) != 0) continue;
    if (!best || m / wm + n / wn < m / best->wm + n / best->wn) best = WarpPartition{wm, wn};
  }
  if (!best && why)
    *why = fmt::format(
        "no split of {} warps tiles [{}, {}] with 16 x 8 mma fragments (M must be a multiple of 16 x the "
        "warps "
        "down M, N of 8 x the warps across N)",
        warps, m, n);
  return best;
}

layout::Layout gemm_c_layout(int64_t m, int64_t n, WarpPartition w) {
  return compose(layout::spatial(w.wm, w.wn), layout::local(m / 16 / w.wm, n / 8 / w.wn),
                 gemm_atom().layout_c);
}

layout::Layout gemm_a_layout(int64_t m, int64_t k, WarpPartition w) {
  return compose(layout::reduce(layout::spatial(w.wm, 1, w.wn), {2}), layout::local(m / 16 / w.wm, k / 16),
                 gemm_atom().layout_a);
}

layout::Layout gemm_b_layout(int64_t k, int64_t n, WarpPartition w) {
  return compose(layout::reduce(layout::spatial(w.wm, 1, w.wn), {0}), layout::local(k / 16, n / 8 / w.wn),
                 gemm_atom().layout_b);
}

bool gemm_uses_wgmma(const GemmShape& g, int64_t threads, const target::Target& target) {
  if (!target.features.wgmma || threads % 128 != 0 || threads == 0) return false;
  if (!g.b_shared || !g.a_open || !g.b_open || g.transpose_a || !g.transpose_b) return false;
  const bool types = (g.ab == DataType::f16() && (g.c == DataType::f32() || g.c == DataType::f16())) ||
                     (g.ab == DataType::bf16() && g.c == DataType::f32());
  const int64_t row_bytes = g.k * g.ab.bits() / 8;
  return types && g.m % (64 * (threads / 128)) == 0 && g.n % 8 == 0 && g.n <= 256 &&
         (row_bytes == 32 || row_bytes == 64 || row_bytes == 128);
}

layout::Layout gemm_wgmma_a_layout(int64_t m, int64_t k, int64_t threads) {
  const int64_t groups = threads / 128;
  return compose(layout::spatial(groups, 1), layout::local(m / 64 / groups, k / 16),
                 target::wgmma_register_a());
}

layout::Layout gemm_wgmma_c_layout(int64_t m, int64_t n, int64_t threads) {
  const int64_t groups = threads / 128;
  return compose(layout::spatial(groups, 1), layout::local(m / 64 / groups, 1), target::wgmma_accumulator(n));
}

bool tma_tile(const layout::Index& shape, DataType dtype, const layout::Layout& layout, bool swizzled) {
  const int bits = dtype.bits();
  if (shape.size() != 2 || (bits != 8 && bits != 16 && bits != 32 && bits != 64) || shape[0] > 256 ||
      shape[1] > 256 || shape[1] * bits % 128 != 0 || target::tma_swizzle_bytes(layout, bits) < 0)
    return false;
  if (!swizzled) return true;
  const int64_t row_bytes = shape[1] * bits / 8;
  return (row_bytes == 32 || row_bytes == 64 || row_bytes == 128) &&
         layout == shared_tile_layout(shape, dtype);
}

layout::Layout shared_tile_layout(const layout::Index& shape, DataType dtype) {
  if (shape.size() < 2 || 128 % dtype.bits() != 0) return layout::local(shape);
  if (shape.size() > 2) {  // leading dimensions (a pipeline's stages) each hold one swizzled tile
    layout::Index lead(shape.begin(), shape.end() - 2);
    lead.push_back(1);
    lead.push_back(1);
    return compose(layout::local(lead), shared_tile_layout({shape[shape.size() - 2], shape.back()}, dtype));
  }
  const int64_t per_chunk = 128 / dtype.bits();  // elements in 16 bytes
  const int64_t rows = shape[0], cols = shape[1];
  if (cols % per_chunk != 0) return layout::local(shape);
  const int64_t chunks = cols / per_chunk;
  if (chunks < 2 || !std::has_single_bit(static_cast<uint64_t>(chunks))) return layout::local(shape);
  // 2^s rows share one 128-byte line when a row is narrower than 8 chunks.
  const int log_step = chunks >= 8 ? 0 : std::countr_zero(static_cast<uint64_t>(8 / chunks));
  return compose(layout::make_swizzle(layout::local(rows, chunks), 1, log_step), layout::local(1, per_chunk));
}

std::optional<layout::Layout> copy_layout(const layout::Index& shape, DataType dtype, int64_t threads,
                                          std::string* why) {
  if (shape.empty() || shape.size() > 2) {
    if (why) *why = fmt::format("the tile layer moves tiles of rank 1 or 2, not {}", shape.size());
    return std::nullopt;
  }
  const int64_t rows = shape.size() == 2 ? shape[0] : 1, cols = shape.back();
  // The tile passes through the block's registers. Checked before any product is formed (the extents come
  // from the program and may be near 2^63).
  const int64_t max_elements = target::kRegisterFileBits / std::max(1, dtype.bits());
  if (rows < 1 || cols < 1 || rows > max_elements || cols > max_elements / rows) {
    if (why)
      *why = fmt::format("a [{}] tile of {} is larger than a block's registers ({} bits) can hold",
                         fmt::join(shape, ", "), dtype.name(), target::kRegisterFileBits);
    return std::nullopt;
  }
  // The widest power-of-two run of at most 16 bytes that divides a row.
  int64_t vec = std::max<int64_t>(1, 128 / std::max(1, dtype.bits()));
  while (vec > 1 && cols % vec != 0) vec /= 2;
  const int64_t runs = cols / vec;  // runs per row
  // Threads across a row: the largest power of two dividing both the runs and the thread count.
  int64_t across = 1;
  while (across * 2 <= runs && runs % (across * 2) == 0 && threads % (across * 2) == 0) across *= 2;
  int64_t down = threads / across;
  layout::Layout lay;
  if (rows % down == 0) {
    lay = compose(layout::local(rows / down, runs / across), layout::spatial(down, across),
                  layout::local(1, vec));
  } else if (down % rows == 0 && runs == across) {
    // More threads than runs: the rest hold copies (a store from replicas writes the same value).
    lay = compose(layout::replicate(down / rows), layout::spatial(rows, across), layout::local(1, vec));
  } else {
    if (why)
      *why = fmt::format("{} threads do not spread over a [{}, {}] tile in runs of {} elements", threads,
                         rows, cols, vec);
    return std::nullopt;
  }
  if (shape.size() == 1) lay = layout::reduce(lay, {0});
  return lay;
}

}  // namespace tilevm::tile
