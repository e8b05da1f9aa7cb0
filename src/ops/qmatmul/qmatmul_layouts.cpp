// The quantized matmul's layouts (qmatmul_layouts.h), written as the text form's chains.
#include "qmatmul_layouts.h"

#include <bit>
#include <functional>

#include "tilevm/target/wgmma.h"

namespace tilevm::ops {

namespace {

using layout::column_local;
using layout::column_spatial;
using layout::Layout;
using layout::local;
using layout::reduce;
using layout::replicate;
using layout::spatial;

// The mma.m16n8k16 fragments (target/atoms.h): A [16, 16], B [16, 8], C [16, 8] over one warp.
Layout mma_a() {
  return column_local(2, 2) * spatial(8, 4) * local(1, 2);
}
Layout mma_b() {
  return local(2, 1) * column_spatial(4, 8) * local(2, 1);
}
Layout mma_c() {
  return local(2, 1) * spatial(8, 4) * local(1, 2);
}

// The pair order for a fragment held by a thread as slots (e0, e1, the fragment's `fragment_slots`, the
// pair index), outer to inner: `stored` moves the pair index out past 16 / b slots, all of the fragment's
// and 16 / b / fragment_slots of (e0, e1), taken from e1 first. `pair_local(x, y, p)` is the local layout
// with x, y at the dimensions of e0, e1 and p at the pair's (1 elsewhere); nullopt where (e0, e1) cannot
// give the slots.
std::optional<PairLayouts> pair_order(const Layout& warps, int64_t e0, int64_t e1, const Layout& fragment,
                                      int64_t fragment_slots, int64_t bits,
                                      const std::function<Layout(int64_t, int64_t, int64_t)>& pair_local) {
  const int64_t need = 16 / bits / fragment_slots;
  int64_t lo0 = 0, lo1 = 0;  // the block's slots inside the pair index
  if (e1 % need == 0) {
    lo0 = 1, lo1 = need;
  } else if (need % e1 == 0 && e0 % (need / e1) == 0) {
    lo0 = need / e1, lo1 = e1;
  } else {
    return std::nullopt;
  }
  const Layout pair = pair_local(1, 1, 2);
  PairLayouts l;
  l.mma = warps * pair_local(e0, e1, 1) * fragment * pair;
  l.stored = warps * pair_local(e0 / lo0, e1 / lo1, 1) * pair * pair_local(lo0, lo1, 1) * fragment;
  return l;
}

}  // namespace

SliceLayouts slice_layouts(const QMatmulConfig& c, const QMatmulShape& s, int64_t warps_m, int64_t warps_k) {
  SliceLayouts l;
  const int64_t WM = warps_m, WN = c.warps_n, WK = warps_k;
  if (c.wgmma) {
    // [BN, BK] weights over the warpgroups, 64 rows each, in column groups of 64: thread (i, j) of a
    // warpgroup holds rows 4i..4i+3 of each group as 8 consecutive k (chunk j of the group's 128-byte
    // swizzled row), so that the 8 threads of a quarter warp store the 8 chunks of one row: distinct banks
    // under the swizzle.
    const int64_t WG = WN / 4;
    l.b = spatial(WG, 1) * local(1, c.block_k / 64) * spatial(16, 8) * local(4, 1) * local(1, 8);
    // Register A: each column group (qmatmul_rs_group_k) in wgmma's A fragment order, k steps of 16, the
    // groups outermost in each thread, so that a group's codes are a run of the thread's words.
    if (c.register_a) {
      const int64_t gk = s.register_a.group_k;
      l.b = spatial(WG, 1) * local(1, c.block_k / gk) * local(1, gk / 16) * target::wgmma_register_a();
    }
    l.b_read = layout::transpose(l.b);
    l.dot_c = spatial(WG, 1) * target::wgmma_accumulator(c.block_m);  // C^T [BN, BM]
    l.c = layout::transpose(l.dot_c);
    l.a = l.a_load = l.b;  // the activations go from shared memory to the tensor cores: no register layout
  } else if (c.swapped()) {
    const int64_t tn16 = s.tn / 2;  // m16 tiles of mma's A operand along N
    l.b = spatial(WN, 1) * local(tn16, s.tk) * mma_a();
    l.b_read = layout::transpose(l.b);
    l.a = reduce(spatial(WN, 1, 1), {0}) * local(s.tk, 1) * mma_b();
    l.a_load = layout::transpose(l.a);
    l.dot_c = spatial(WN, 1) * local(tn16, 1) * mma_c();
    l.c = layout::transpose(l.dot_c);
  } else if (WK == 1) {
    l.a = reduce(spatial(WM, 1, WN), {2}) * local(s.tm, s.tk) * mma_a();
    l.a_load = l.a;
    l.b = reduce(spatial(WM, 1, WN), {0}) * local(s.tk, s.tn) * mma_b();
    l.c = spatial(WM, WN) * local(s.tm, s.tn) * mma_c();
  } else {
    l.a = reduce(spatial(WK, WM, 1, WN), {3}) * local(1, s.tm, s.tk) * mma_a();
    // Column-major warps (wm fastest, then wk) with the WN replicas inside: the warp order of l.a.
    l.a_load = column_spatial(WM, WK) * replicate(WN) * local(s.tm, s.tk) * mma_a();
    l.b = reduce(spatial(WK, WM, 1, WN), {1}) * local(1, s.tk, s.tn) * mma_b();
    l.c = spatial(WK, WM, WN) * local(1, s.tm, s.tn) * mma_c();
  }
  if (!c.swapped() && !c.wgmma) l.dot_c = l.c, l.b_read = l.b;
  // One slice's words in 16-byte chunks, chunk g of every thread before chunk g + 1 of any: a warp's 16-byte
  // shared loads then read consecutive addresses (one thread's words in a row conflict 4 ways). Slices of
  // the WK groups follow one another; the WM warps of a column read the same words.
  const Layout slice_threads = spatial(WN * 32);
  const Layout slice = s.words_per_thread % 4 == 0 ? local(s.words_per_thread / 4) * slice_threads * local(4)
                                                   : slice_threads * local(s.words_per_thread);
  l.bt = spatial(WK) * replicate(WM) * slice;
  // Register A: group-major (RegisterAGroups), so that a group's codes are rows of their own.
  if (c.register_a) {
    l.bt = local(s.register_a.groups) * slice_threads * local(s.register_a.wc);
  }
  return l;
}

std::optional<PairLayouts> pair_layouts(const QMatmulProblem& p, const QMatmulConfig& c,
                                        const QMatmulShape& s, int64_t warps_m, int64_t warps_k) {
  const int64_t bits = s.bits;
  if (c.wgmma) return std::nullopt;  // the wgmma form converts its codes in order
  if (!(bits == 1 || bits == 2 || bits == 4) || !qmatmul_weight_fits(p.wtype, p.atype)) return std::nullopt;
  const int64_t WM = warps_m, WN = c.warps_n, WK = warps_k;
  if (c.swapped()) {
    // [BN, SK/2, 2]: slots (tn16, tk, the fragment's n-half and k-half, the pair index).
    auto pair_local = [](int64_t x, int64_t y, int64_t q) { return local(x, y, q); };
    const Layout fragment = column_local(2, 2, 1) * spatial(8, 4, 1);
    return pair_order(spatial(WN, 1, 1), s.tn / 2, s.tk, fragment, 4, bits, pair_local);
  }
  // [SK/2, BN, 2], or with groups of warps along K [WK, SK/2, BN, 2]: slots (tk, tn, the fragment's two
  // k-halves, the pair index).
  const bool batched = WK > 1;
  auto dims = [&](layout::Index last3) {
    if (batched) last3.insert(last3.begin(), 1);
    return last3;
  };
  auto pair_local = [&](int64_t x, int64_t y, int64_t q) { return local(dims({x, y, q})); };
  const Layout warps = batched ? reduce(spatial(WK, WM, 1, WN, 1), {1}) : reduce(spatial(WM, 1, WN, 1), {0});
  const Layout fragment = local(dims({2, 1, 1})) * column_spatial(dims({4, 8, 1}));
  return pair_order(warps, s.tk, s.tn, fragment, 2, bits, pair_local);
}

std::optional<PairLayouts> named_pair_layouts(ir::ProgramBuilder& pb, std::optional<PairLayouts> pairs) {
  if (pairs) {
    pairs->mma = pb.named_layout("layout_b3", pairs->mma);
    pairs->stored = pb.named_layout("layout_bs", pairs->stored);
  }
  return pairs;
}

Layout column_row(const Layout& l) {
  return layout::insert_dim(reduce(l, {0}), 0);
}

Layout shared_a_layout(const QMatmulConfig& c, int64_t weight_bits) {
  // Warp-specialized, [STAGES, BK / 64, BM, 64]: each column group is a tile of its own, as the TMA writes
  // it (a box row of 128-byte swizzle is at most 128 bytes) and a DotAsync reads it.
  // With register A, in groups of qmatmul_rs_group_k columns (64-byte swizzle for 32).
  if (c.register_a) {
    const int64_t gk = qmatmul_rs_group_k(c, weight_bits);
    return local(c.stages, c.block_k / gk, 1, 1) *
           target::wgmma_swizzled_tile(c.block_m, gk, 16, static_cast<int>(gk * 2));
  }
  if (c.warp_specialized)
    return local(c.stages, c.block_k / 64, 1, 1) * target::wgmma_swizzled_tile(c.block_m, 64, 16, 128);
  // The wgmma form's B operand: [BM, BK] in column groups of 64, each the 128-byte swizzled form.
  if (c.wgmma)
    return local(c.stages, 1, 1) * local(1, c.block_k / 64) *
           target::wgmma_swizzled_tile(c.block_m, 64, 16, 128);
  const int64_t chunks = c.block_k / 8;
  Layout rows = local(c.block_m, chunks);
  if (chunks >= 2 && std::has_single_bit(static_cast<uint64_t>(chunks))) rows = layout::make_swizzle(rows, 1);
  return local(c.stages, 1, 1) * rows * local(1, 8);
}

}  // namespace tilevm::ops
