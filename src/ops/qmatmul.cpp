// The quantized-matmul programs (qmatmul.h), written with the IR builder. Sizes come from QMatmulShape
// (qmatmul_shape.h); validation from check_config (qmatmul_config.cpp).
#include "tilevm/ops/qmatmul.h"

#include <bit>
#include <functional>
#include <optional>
#include <string>

#include "qmatmul_shape.h"
#include "tilevm/ir/builder.h"
#include "tilevm/layout/layout.h"
#include "tilevm/support/error.h"

namespace tilevm::ops {

namespace {

using layout::Layout;

// The mma.m16n8k16 fragments (target/atoms.h): A [16, 16], B [16, 8], C [16, 8] over one warp.
Layout mma_a() { return compose(compose(layout::column_local({2, 2}), layout::spatial({8, 4})), layout::local({1, 2})); }
Layout mma_b() {
  return compose(compose(layout::local({2, 1}), layout::column_spatial({4, 8})), layout::local({2, 1}));
}
Layout mma_c() { return compose(compose(layout::local({2, 1}), layout::spatial({8, 4})), layout::local({1, 2})); }

// The register layouts of one step of the loop: one Dot slice per group of warps along K. Warps are numbered
// (wk * WM + wm) * WN + wn (spatial(WK, WM, WN)): A is replicated over the warps of one row (wn), B over the
// warps of one column (wm). With WK == 1 the tiles are 2-D; with WK > 1 the Dot operands and the accumulator
// carry a leading batch dimension of WK, spread over the groups of warps (a batched Dot).
//
// With swapped operands (QMatmulConfig::swapped) the Dot is C^T[BN, 8] = W^T[BN, SK] @ A^T[SK, 8]: the
// codes are mma's A operand (warps along N) and the activations its B operand (every warp the same). Each
// is read through the transpose of its fragment layout (the same registers; only the names of the elements
// swap), so the transform reads the codes from [K, N], the activations come from the [8, BK] shared tile,
// and the [BN, 8] result is the [8, BN] accumulator: a View relabels them, no data moves.
struct SliceLayouts {
  Layout a_load;  // [BM, WK * SK]  A as read from shared memory: group wk holds columns wk*SK ..
  Layout a;       // [BM, SK] or [WK, BM, SK]: the same registers as a_load, for the Dot ([SK, 8] swapped)
  Layout b;       // [SK, BN] or [WK, SK, BN]: the codes, in the mma B fragment order ([BN, SK] swapped)
  Layout b_read;  // [SK, BN]: the codes as the transform reads them from [K, N] (b, or b transposed)
  Layout bt;      // [WK * slice words]  the same bits as u32 words, in 16-byte chunks per thread
  Layout c;       // [BM, BN] or [WK, BM, BN]: the accumulator
  Layout dot_c;   // the Dot's C: c, or swapped [BN, 8] (the same registers as c)
};

SliceLayouts slice_layouts(const QMatmulConfig& c, const QMatmulShape& s, int64_t warps_m, int64_t warps_k) {
  SliceLayouts l;
  const int64_t WM = warps_m, WN = c.warps_n, WK = warps_k;
  if (c.swapped()) {
    const int64_t tn16 = s.tn / 2;  // m16 tiles of mma's A operand along N
    l.b = compose(compose(layout::spatial({WN, 1}), layout::local({tn16, s.tk})), mma_a());
    l.b_read = layout::transpose(l.b);
    l.a = compose(compose(layout::reduce(layout::spatial({WN, 1, 1}), {0}), layout::local({s.tk, 1})), mma_b());
    l.a_load = layout::transpose(l.a);
    l.dot_c = compose(compose(layout::spatial({WN, 1}), layout::local({tn16, 1})), mma_c());
    l.c = layout::transpose(l.dot_c);
  } else if (WK == 1) {
    l.a = compose(compose(layout::reduce(layout::spatial({WM, 1, WN}), {2}), layout::local({s.tm, s.tk})), mma_a());
    l.a_load = l.a;
    l.b = compose(compose(layout::reduce(layout::spatial({WM, 1, WN}), {0}), layout::local({s.tk, s.tn})), mma_b());
    l.c = compose(compose(layout::spatial({WM, WN}), layout::local({s.tm, s.tn})), mma_c());
  } else {
    l.a = compose(compose(layout::reduce(layout::spatial({WK, WM, 1, WN}), {3}), layout::local({1, s.tm, s.tk})),
                  mma_a());
    // Column-major warps (wm fastest, then wk) with the WN replicas inside: the warp order of l.a.
    l.a_load = compose(compose(compose(layout::column_spatial({WM, WK}), layout::replicate(WN)),
                               layout::local({s.tm, s.tk})),
                       mma_a());
    l.b = compose(compose(layout::reduce(layout::spatial({WK, WM, 1, WN}), {1}), layout::local({1, s.tk, s.tn})),
                  mma_b());
    l.c = compose(compose(layout::spatial({WK, WM, WN}), layout::local({1, s.tm, s.tn})), mma_c());
  }
  if (!c.swapped()) l.dot_c = l.c, l.b_read = l.b;
  // One slice's words in 16-byte chunks, chunk g of every thread before chunk g + 1 of any: a warp's 16-byte
  // shared loads then read consecutive addresses (one thread's words in a row conflict 4 ways). Slices of
  // the WK groups follow one another; the WM warps of a column read the same words.
  const Layout slice_threads = layout::spatial({WN * 32});
  const Layout slice = s.words_per_thread % 4 == 0
                           ? compose(compose(layout::local({s.words_per_thread / 4}), slice_threads), layout::local({4}))
                           : compose(slice_threads, layout::local({s.words_per_thread}));
  l.bt = compose(compose(layout::spatial({WK}), layout::replicate(WM)), slice);
  return l;
}

// 1-, 2- and 4-bit codes are stored so that the two codes of each f16/bf16 pair of the mma B fragment sit
// 16 bits apart in one 32-bit word: one lop3 (and, for some pairs, a shift shared by the word) then places
// both codes in their halves' mantissas (converters.h), instead of a prmt per pair. Layouts express this
// with K split into (K/2, 2), the pair index last: `mma` is layout_b with that split (the same slots), and
// `stored` holds the same elements with the pair index moved outwards to stride 16 / b slots, so that a
// word's low half holds the first codes of 16 / b pairs and its high half their second codes. The matmul
// reads `stored` (a View of the loaded words) and casts it into `mma` (Cast with layout=); the transform
// does the reverse with a Cast that only reorders.
struct PairLayouts {
  Layout mma;     // [SK/2, BN, 2] or [WK, SK/2, BN, 2]; swapped [BN, SK/2, 2]
  Layout stored;  // the same elements per thread, the pair index at slot stride 16 / b
};

// The pair order for a fragment held by a thread as slots (e0, e1, the fragment's `fragment_slots`, the
// pair index), outer to inner: `stored` moves the pair index out past 16 / b slots, all of the fragment's
// and 16 / b / fragment_slots of (e0, e1), taken from e1 first. `local(x, y, p)` is the local layout with
// x, y at the dimensions of e0, e1 and p at the pair's (1 elsewhere); nullopt where (e0, e1) cannot give
// the slots.
std::optional<PairLayouts> pair_order(const Layout& warps, int64_t e0, int64_t e1, const Layout& fragment,
                                      int64_t fragment_slots, int64_t bits,
                                      const std::function<Layout(int64_t, int64_t, int64_t)>& local) {
  const int64_t need = 16 / bits / fragment_slots;
  int64_t lo0 = 0, lo1 = 0;  // the block's slots inside the pair index
  if (e1 % need == 0) {
    lo0 = 1, lo1 = need;
  } else if (need % e1 == 0 && e0 % (need / e1) == 0) {
    lo0 = need / e1, lo1 = e1;
  } else {
    return std::nullopt;
  }
  const Layout pair = local(1, 1, 2);
  PairLayouts l;
  l.mma = compose(compose(compose(warps, local(e0, e1, 1)), fragment), pair);
  l.stored = compose(compose(compose(compose(warps, local(e0 / lo0, e1 / lo1, 1)), pair), local(lo0, lo1, 1)),
                     fragment);
  return l;
}

std::optional<PairLayouts> pair_layouts(const QMatmulProblem& p, const QMatmulConfig& c, const QMatmulShape& s,
                                        int64_t warps_m, int64_t warps_k) {
  const int64_t bits = s.bits;
  if (!(bits == 1 || bits == 2 || bits == 4) || !qmatmul_weight_fits(p.wtype, p.atype)) return std::nullopt;
  const int64_t WM = warps_m, WN = c.warps_n, WK = warps_k;
  if (c.swapped()) {
    // [BN, SK/2, 2]: slots (tn16, tk, the fragment's n-half and k-half, the pair index).
    auto local = [](int64_t x, int64_t y, int64_t q) { return layout::local({x, y, q}); };
    const Layout fragment = compose(layout::column_local({2, 2, 1}), layout::spatial({8, 4, 1}));
    return pair_order(layout::spatial({WN, 1, 1}), s.tn / 2, s.tk, fragment, 4, bits, local);
  }
  // [SK/2, BN, 2], or with groups of warps along K [WK, SK/2, BN, 2]: slots (tk, tn, the fragment's two
  // k-halves, the pair index).
  const bool batched = WK > 1;
  auto dims = [&](layout::Index last3) {
    if (batched) last3.insert(last3.begin(), 1);
    return last3;
  };
  auto local = [&](int64_t x, int64_t y, int64_t q) { return layout::local(dims({x, y, q})); };
  const Layout warps = batched ? layout::reduce(layout::spatial({WK, WM, 1, WN, 1}), {1})
                               : layout::reduce(layout::spatial({WM, 1, WN, 1}), {0});
  const Layout fragment = compose(layout::local(dims({2, 1, 1})), layout::column_spatial(dims({4, 8, 1})));
  return pair_order(warps, s.tk, s.tn, fragment, 2, bits, local);
}

// The pair layouts under the names the programs print them by.
std::optional<PairLayouts> named_pair_layouts(ir::ProgramBuilder& pb, std::optional<PairLayouts> pairs) {
  if (pairs) {
    pairs->mma = pb.named_layout("layout_b3", pairs->mma);
    pairs->stored = pb.named_layout("layout_bs", pairs->stored);
  }
  return pairs;
}

// [1, BN]: a row of per-column values (scales, zeros) held by every thread for each column it holds in
// `l` (the elementwise broadcast rule): `l` with dimension 0 reduced away and put back with extent 1.
Layout column_row(const Layout& l) { return layout::insert_dim(layout::reduce(l, {0}), 0); }

// The A tile in shared memory: [BM, BK] f16 in 16-byte chunks, swizzled (chunk index xor row) when the
// chunk count allows it, so that the cp.async writes and the ldmatrix reads avoid bank conflicts.
Layout shared_a_layout(const QMatmulConfig& c) {
  const int64_t chunks = c.block_k / 8;
  Layout rows = layout::local({c.block_m, chunks});
  if (chunks >= 2 && std::has_single_bit(static_cast<uint64_t>(chunks))) rows = layout::make_swizzle(rows, 1);
  return compose(compose(layout::local({c.stages, 1, 1}), rows), layout::local({1, 8}));
}

}  // namespace

ir::Program build_qmatmul_transform(const QMatmulProblem& p, const QMatmulConfig& c) {
  using namespace ir;
  check_config(p, c);
  if (c.dequant_gemm) fail("qmatmul: the dequant_gemm configuration has no qmatmul_transform program (it runs dequantize, then cuBLAS)");
  const QMatmulShape s(p, c);
  ProgramBuilder pb("qmatmul_transform");
  const int64_t BK = pb.constant("BK", c.block_k), BN = pb.constant("BN", c.block_n);
  const int64_t SK = pb.constant("SK", c.slice_k);
  const int64_t SLICE_WORDS = pb.constant("SLICE_WORDS", s.slice_words);
  const int64_t TILE_WORDS = pb.constant("TILE_WORDS", s.tile_words);
  // The matmul's slice layouts for one row of warps and one group along K: the same bits per thread as
  // each slice the matmul's warps read, each written once.
  const SliceLayouts l = slice_layouts(c, s, 1, 1);
  // The codes as read from [K, N]: the mma B fragment's order, or with swapped operands A's, transposed.
  const Layout layout_read = pb.named_layout("layout_b", l.b_read);
  const Layout layout_bt = pb.named_layout("layout_bt", l.bt);
  const std::optional<PairLayouts> pairs = named_pair_layouts(pb, pair_layouts(p, c, s, 1, 1));
  Pointer b_ptr = pb.pointer_param("b_ptr", p.wtype);
  Pointer t_ptr = pb.pointer_param("t_ptr", DataType::uint(32));
  Scalar n = pb.scalar_param("n", DataType::i32()), k = pb.scalar_param("k", DataType::i32());
  pb.grid({ceil_div(k, BK), ceil_div(n, BN)});
  pb.threads(static_cast<int>(32 * c.warps_n));
  auto [kt, nt] = pb.block_indices("kt", "nt");
  Tensor gb = pb.view_global("gb", b_ptr, p.wtype, {k, n});
  Tensor gt = pb.view_global("gt", t_ptr, DataType::uint(32), {ceil_div(k, BK), ceil_div(n, BN), TILE_WORDS});
  pb.for_range("uk", BK / SK, [&](Scalar uk) {
    Tensor b = pb.load_global("b", gb, layout_read, {kt * BK + uk * SK, nt * BN});
    if (pairs) {  // the codes of each pair 16 bits apart (pair_layouts)
      Tensor b3 = pb.view("b3", b, pairs->mma);
      b = pb.cast("bs", b3, p.wtype, pairs->stored);
    }
    Tensor bt = pb.view("bt", b, DataType::uint(32), layout_bt);
    pb.store_global(bt, gt(kt, nt), {uk * SLICE_WORDS});
  });
  return pb.build();
}

ir::Program build_qmatmul(const QMatmulProblem& p, const QMatmulConfig& c) {
  using namespace ir;
  check_config(p, c);
  if (c.dequant_gemm) fail("qmatmul: the dequant_gemm configuration has no qmatmul program (it runs dequantize, then cuBLAS)");
  const QMatmulShape s(p, c);
  const DataType at = p.atype, f32 = DataType::f32(), u32 = DataType::uint(32), i32 = DataType::i32();
  const bool fits = qmatmul_weight_fits(p.wtype, at);
  const bool split = c.split_k > 1;
  const bool batched = c.warps_k > 1;  // groups of warps along K: rank-3 operands (see slice_layouts)

  ProgramBuilder pb("qmatmul");
  const int64_t BM = pb.constant("BM", c.block_m), BN = pb.constant("BN", c.block_n);
  const int64_t BK = pb.constant("BK", c.block_k), SK = pb.constant("SK", c.slice_k);
  const int64_t G = pb.constant("G", p.group);
  const int64_t STAGES = pb.constant("STAGES", c.stages), SPLIT = pb.constant("SPLIT", c.split_k);
  const int64_t WK = batched ? pb.constant("WK", c.warps_k) : 1;
  const int64_t SLICE_WORDS = pb.constant("SLICE_WORDS", s.slice_words);
  const int64_t TILE_WORDS = pb.constant("TILE_WORDS", s.tile_words);
  const int64_t SROWS = s.per_channel ? 0 : pb.constant("SROWS", s.scale_rows);
  const SliceLayouts l = slice_layouts(c, s, c.warps_m, c.warps_k);
  const Layout layout_a = pb.named_layout("layout_a", l.a);
  const bool swapped = c.swapped();  // the mma's operands swapped (slice_layouts)
  // A is read in another layout than the Dot's (a batch dimension, or transposed) and relabelled by a View.
  const bool relabel_a = !(l.a_load == l.a);
  const Layout layout_a_load = relabel_a ? pb.named_layout("layout_a_load", l.a_load) : layout_a;
  const Layout layout_dot_c = swapped ? pb.named_layout("layout_dot_c", l.dot_c) : l.c;
  const Layout layout_b = pb.named_layout("layout_b", l.b);
  const Layout layout_bt = pb.named_layout("layout_bt", l.bt);
  const Layout layout_c = pb.named_layout("layout_c", l.c);
  const std::optional<PairLayouts> pairs = named_pair_layouts(pb, pair_layouts(p, c, s, c.warps_m, c.warps_k));
  // Per-column values (scales, zeros) in the columns a thread holds of `lay`: [1, BN], or with WK > 1
  // [WK, BN] (each group's own row, loaded as one tile) viewed as [WK, 1, BN] for the broadcast.
  auto column_rows = [&](const std::string& name, const Layout& lay) {
    const Layout rows = batched ? layout::reduce(lay, {1}) : column_row(lay);
    return std::pair{pb.named_layout(name, rows), batched ? pb.named_layout(name + "3", layout::insert_dim(rows, 1))
                                                          : rows};
  };
  // Scales multiply the f32 tile (layout_c's columns); zeros, and scales on the slow path, the codes
  // (layout_b's columns).
  const auto [layout_sc, layout_sc3] = column_rows("layout_sc", l.c);
  // Rows in the codes' columns: only zero points and the f32 path read them (neither is ever swapped).
  std::pair<Layout, Layout> code_rows;
  if (p.zero_point || !fits) code_rows = column_rows("layout_sb", l.b);
  const auto& [layout_sb, layout_sb3] = code_rows;
  const Layout smem_a_layout = pb.named_layout("smem_a_layout", shared_a_layout(c));
  // After the loop with WK > 1: the groups' tiles summed, each thread a run of columns of the [BM, BN] sum.
  const int64_t per_thread = c.block_m * c.block_n / c.threads();
  const Layout layout_o =
      batched ? pb.named_layout("layout_o", compose(layout::spatial({c.block_m, c.block_n / per_thread}),
                                                    layout::local({1, per_thread})))
              : layout_c;

  Pointer a_ptr = pb.pointer_param("a_ptr", at);
  Pointer t_ptr = pb.pointer_param("t_ptr", u32);
  Pointer scale_ptr = pb.pointer_param("scale_ptr", at);
  std::optional<Pointer> zero_ptr;
  if (p.zero_point) zero_ptr = pb.pointer_param("zero_ptr", at);
  Pointer c_ptr = pb.pointer_param("c_ptr", split ? f32 : at);
  Scalar m = pb.scalar_param("m", i32), n = pb.scalar_param("n", i32), k = pb.scalar_param("k", i32);
  pb.grid({ceil_div(m, BM), ceil_div(n, BN), SPLIT});
  pb.threads(static_cast<int>(c.threads()));

  auto [bi, bj, bz] = pb.block_indices("bi", "bj", "bz");
  Tensor ga = pb.view_global("ga", a_ptr, at, {m, k});
  Tensor gt = pb.view_global("gt", t_ptr, u32, {ceil_div(k, BK), ceil_div(n, BN), TILE_WORDS});
  Tensor gs = pb.view_global("gs", scale_ptr, at, {k / G, n});
  std::optional<Tensor> gz;
  if (zero_ptr) gz = pb.view_global("gz", *zero_ptr, at, {k / G, n});
  // This block's k-tiles: split z takes tiles [z * per, min(k_tiles, (z + 1) * per)).
  Scalar k_tiles = pb.let("k_tiles", ceil_div(k, BK));
  Scalar per = pb.let("per", ceil_div(k_tiles, SPLIT));
  Scalar first = pb.let("first", bz * per);
  Scalar count = pb.let("count", max(0, min(k_tiles - first, per)));

  Tensor smem_a = pb.allocate_shared("smem_a", at, smem_a_layout);
  Tensor smem_b = pb.allocate_shared("smem_b", u32, {STAGES, TILE_WORDS});
  std::optional<Tensor> smem_s, smem_z;
  if (!s.per_channel) smem_s = pb.allocate_shared("smem_s", at, {STAGES, SROWS, BN});
  if (gz && !s.per_channel) smem_z = pb.allocate_shared("smem_z", at, {STAGES, SROWS, BN});
  // Swapped with per-channel scales, the Dot accumulates in its own C layout, relabelled after the loop.
  Tensor acc = pb.allocate_register("acc", f32, swapped && s.per_channel ? layout_dot_c : layout_c, 0.0);
  // Per channel, the single row of zero points (and, on the f32 path, of scales) is loaded once, in the
  // layout of B's columns.
  auto channel_row = [&](const std::string& name, const Tensor& g) {
    if (!batched) return pb.load_global(name, g, layout_sb, {0, bj * BN});
    // [1, BN] with every group holding the same columns, viewed as [1, 1, BN].
    const Layout row = column_row(layout::reduce(l.b, {0}));
    Tensor r = pb.load_global(name, g, pb.named_layout("layout_zrow", row), {0, bj * BN});
    return pb.view(name + "3", r, pb.named_layout("layout_zrow3", layout::insert_dim(row, 0)));
  };
  std::optional<Tensor> zero_row, scale_row;
  if (gz && s.per_channel) zero_row = channel_row("zero_row", *gz);
  if (!fits && s.per_channel) scale_row = pb.load_global("scale_row", gs, layout_sb, {0, bj * BN});

  // Starts the copies of this block's k-tile `t` (global tile first + t) into stage `stage`.
  auto preload = [&](const Scalar& t, const Scalar& stage) {
    Scalar kt = first + t;
    pb.copy_async(smem_a[stage], ga(from(bi * BM), from(kt * BK)));
    pb.copy_async(smem_b[stage], gt(kt, bj));
    if (smem_s) {
      // The group rows this tile covers: BK / G rows from kt * BK / G, or the one row holding it.
      Scalar row = (kt * BK) / G;
      pb.copy_async(smem_s->operator[](stage), gs(from(row), from(bj * BN)));
      if (smem_z) pb.copy_async(smem_z->operator[](stage), gz->operator()(from(row), from(bj * BN)));
    }
  };
  // The per-column rows of step uk from a stage's [SROWS, BN] shared tile: the row of its slice (0 when the
  // stage holds a single row), or with WK > 1 the WK rows of its WK slices (slice_k == G).
  auto stage_rows = [&](const std::string& name, const TensorRef& smem, const Layout& rows, const Layout& rows3,
                        const Scalar& uk) {
    if (!batched) {
      Scalar row = s.scale_rows > 1 ? Scalar((uk * SK) / G) : Scalar(0);
      return pb.load_shared(name, smem, rows, {row, 0});
    }
    Tensor t = pb.load_shared(name, smem, rows, {uk * WK, 0});
    return pb.view(name + "3", t, rows3);
  };
  // Prologue: tiles 0 .. STAGES - 2, one commit group each (empty past the end, so that the wait below
  // always counts the same number of groups).
  pb.for_range("t0", STAGES - 1, [&](Scalar t0) {
    pb.if_(t0 < count, [&] { preload(t0, t0); });
    pb.copy_async_commit_group();
  });
  pb.copy_async_wait_group(STAGES - 2);
  pb.synchronize();

  Scalar cur = pb.let("cur", 0);
  Scalar next = pb.let("next", STAGES - 1);
  pb.for_range("t", count, [&](Scalar t) {
    // Step uk: slices uk * WK .. uk * WK + WK - 1 of the stage, one per group of warps along K.
    pb.for_range("uk", BK / (SK * WK), [&](Scalar uk) {
      Tensor a = pb.load_shared("a", smem_a[cur], layout_a_load, {0, uk * (SK * WK)});
      if (relabel_a) a = pb.view(swapped ? "ab" : "a3", a, layout_a);
      Tensor bt = pb.load_shared("bt", smem_b[cur], layout_bt, {uk * (SLICE_WORDS * WK)});
      if (fits) {
        auto converted = [&]() -> Tensor {
          if (!pairs) {
            Tensor b = pb.view("b", bt, p.wtype, layout_b);
            return p.wtype == at ? b : pb.cast("bf", b, at);
          }
          // Stored with each pair's codes 16 bits apart (pair_layouts): reordered as they convert.
          Tensor b = pb.view("b", bt, p.wtype, pairs->stored);
          Tensor bf3 = pb.cast("bf3", b, at, pairs->mma);
          return pb.view("bf", bf3, layout_b);
        };
        Tensor bf = converted();
        if (smem_z || zero_row) {
          Tensor z = zero_row ? *zero_row : stage_rows("z", smem_z->operator[](cur), layout_sb, layout_sb3, uk);
          bf = pb.sub("bf", bf, z);  // exact: both are integers of at most 8 bits
        }
        // C += A @ B, or swapped C^T += B^T @ A^T (the weights as the mma's A operand).
        auto mma = [&](const Tensor& acc_in) {
          return swapped ? pb.dot(out(acc_in), bf, a, acc_in) : pb.dot(out(acc_in), a, bf, acc_in);
        };
        if (s.per_channel) {
          mma(acc);
        } else {
          // mma into a zeroed tile, then acc = tile * scale + acc in one fma: the scale multiplies BM x BN
          // sums instead of every one of the BK x BN weights.
          Tensor part = pb.allocate_register("part", f32, layout_dot_c, 0.0);
          mma(part);
          if (swapped) part = pb.view("part_t", part, layout_c);  // [BN, 8] relabelled as [8, BN]
          Tensor sc = stage_rows("sc", smem_s->operator[](cur), layout_sc, layout_sc3, uk);
          Tensor sc32 = pb.cast("sc32", sc, f32);
          pb.fma(out(acc), part, sc32, acc);
        }
      } else {
        // The weight's values do not all fit the activation type (a float with more exponent range):
        // dequantize each weight in f32 and round the product once to ATYPE (warps_k is 1 here).
        Tensor b = pb.view("b", bt, p.wtype, layout_b);
        Tensor b32 = pb.cast("b32", b, f32);
        Tensor sb = scale_row ? *scale_row : stage_rows("sb", smem_s->operator[](cur), layout_sb, layout_sb3, uk);
        Tensor sb32 = pb.cast("sb32", sb, f32);
        pb.mul(out(b32), b32, sb32);
        Tensor bf = pb.cast("bf", b32, at);
        pb.dot(out(acc), a, bf, acc);
      }
    });
    // Refill the stage that tile t - 1 used with tile t + STAGES - 1 (an empty group past the end).
    pb.if_(t + (STAGES - 1) < count, [&] { preload(t + (STAGES - 1), next); });
    pb.copy_async_commit_group();
    pb.assign(cur, (cur + 1) % STAGES);
    pb.assign(next, (next + 1) % STAGES);
    pb.copy_async_wait_group(STAGES - 2);
    pb.synchronize();
  });

  Tensor result = swapped && s.per_channel ? pb.view("acc_t", acc, layout_c) : acc;
  if (batched) {
    // The WK groups' [BM, BN] tiles summed through shared memory: each thread adds the WK values of its own
    // run of columns.
    Tensor parts = pb.allocate_shared("parts", f32, {WK, BM, BN});
    pb.store_shared(acc, parts);
    pb.synchronize();
    const Layout layout_parts =
        pb.named_layout("layout_parts", compose(layout::local({c.warps_k, 1, 1}), layout_o));
    Tensor all = pb.load_shared("all", parts, layout_parts);
    result = pb.reduce_sum("total", all, 0);
  }
  if (s.per_channel && fits) {
    Tensor sc = pb.load_global("sc", gs, pb.named_layout("layout_so", column_row(layout_o)), {0, bj * BN});
    Tensor sc32 = pb.cast("sc32", sc, f32);
    pb.mul(out(result), result, sc32);
  }
  if (split) {
    Tensor gp = pb.view_global("gp", c_ptr, f32, {SPLIT, m, n});
    pb.store_global(result, gp[bz], {bi * BM, bj * BN});
  } else {
    Tensor gc = pb.view_global("gc", c_ptr, at, {m, n});
    Tensor cv = pb.cast("cv", result, at);
    pb.store_global(cv, gc, {bi * BM, bj * BN});
  }
  return pb.build();
}

ir::Program build_qmatmul_reduce(const QMatmulProblem& p, const QMatmulConfig& c) {
  using namespace ir;
  check_config(p, c);
  if (c.dequant_gemm) fail("qmatmul: the dequant_gemm configuration has no qmatmul_reduce program (it runs dequantize, then cuBLAS)");
  const DataType f32 = DataType::f32(), i32 = DataType::i32();
  ProgramBuilder pb("qmatmul_reduce");
  const int64_t SPLIT = pb.constant("SPLIT", c.split_k);
  const int64_t RN = pb.constant("RN", 512);
  // 128 threads, 4 consecutive f32 each (16-byte loads where n allows).
  const Layout layout_r = pb.named_layout("layout_r", compose(layout::spatial({1, 128}), layout::local({1, 4})));
  Pointer p_ptr = pb.pointer_param("p_ptr", f32);
  Pointer c_ptr = pb.pointer_param("c_ptr", p.atype);
  Scalar m = pb.scalar_param("m", i32), n = pb.scalar_param("n", i32);
  pb.grid({m, ceil_div(n, RN)});
  pb.threads(128);
  auto [i, j] = pb.block_indices("i", "j");
  Tensor gp = pb.view_global("gp", p_ptr, f32, {SPLIT, m, n});
  Tensor gc = pb.view_global("gc", c_ptr, p.atype, {m, n});
  Tensor sum = pb.load_global("sum", gp[0], layout_r, {i, j * RN});
  pb.for_range("z", 1, SPLIT, [&](Scalar z) {
    Tensor part = pb.load_global("part", gp[z], layout_r, {i, j * RN});
    pb.add(out(sum), sum, part);
  });
  Tensor cv = pb.cast("cv", sum, p.atype);
  pb.store_global(cv, gc, {i, j * RN});
  return pb.build();
}

ir::Program build_qmatmul_copy(const QMatmulProblem& p) {
  using namespace ir;
  check_problem(p);
  const DataType u32 = DataType::uint(32);
  ProgramBuilder pb("qmatmul_copy");
  const int64_t TW = pb.constant("TW", 1024);
  const Layout layout_w = pb.named_layout("layout_w", compose(layout::spatial({256}), layout::local({4})));
  Pointer b_ptr = pb.pointer_param("b_ptr", u32);
  Pointer t_ptr = pb.pointer_param("t_ptr", u32);
  Scalar words = pb.scalar_param("words", DataType::i64());  // k * n * bits / 32 can pass 2^31
  pb.grid({ceil_div(words, TW)});
  pb.threads(256);
  auto [bi] = pb.block_indices("bi");
  Tensor gb = pb.view_global("gb", b_ptr, u32, {words});
  Tensor gt = pb.view_global("gt", t_ptr, u32, {words});
  Tensor w = pb.load_global("w", gb, layout_w, {bi * TW});
  pb.store_global(w, gt, {bi * TW});
  return pb.build();
}

ir::Program build_dequantize(const QMatmulProblem& p) {
  using namespace ir;
  check_problem(p);
  const DataType at = p.atype, f32 = DataType::f32(), i32 = DataType::i32();
  const bool fits = qmatmul_weight_fits(p.wtype, at);
  ProgramBuilder pb("dequantize");
  // [16, 256] per block of 256 threads: each thread 2 rows of 8 consecutive codes (16-byte ATYPE stores).
  const int64_t TR = pb.constant("TR", 16), TC = pb.constant("TC", 256);
  const int64_t G = pb.constant("G", p.group);
  const Layout layout_d = pb.named_layout(
      "layout_d", compose(compose(layout::local({2, 1}), layout::spatial({8, 32})), layout::local({1, 8})));
  const Layout layout_s = pb.named_layout("layout_s", column_row(layout_d));
  Pointer b_ptr = pb.pointer_param("b_ptr", p.wtype);
  Pointer scale_ptr = pb.pointer_param("scale_ptr", at);
  std::optional<Pointer> zero_ptr;
  if (p.zero_point) zero_ptr = pb.pointer_param("zero_ptr", at);
  Pointer w_ptr = pb.pointer_param("w_ptr", at);
  Scalar n = pb.scalar_param("n", i32), k = pb.scalar_param("k", i32);
  pb.grid({ceil_div(k, TR), ceil_div(n, TC)});
  pb.threads(256);
  auto [bi, bj] = pb.block_indices("bi", "bj");
  Tensor gb = pb.view_global("gb", b_ptr, p.wtype, {k, n});
  Tensor gs = pb.view_global("gs", scale_ptr, at, {k / G, n});
  Tensor gw = pb.view_global("gw", w_ptr, at, {k, n});
  Tensor b = pb.load_global("b", gb, layout_d, {bi * TR, bj * TC});
  // Rows bi * TR .. + 15 lie in one group: G (32, 64, 128 or k) is a multiple of 16 unless G == k < 16,
  // where there is a single group.
  Scalar group_row = (bi * TR) / G;
  Tensor sc = pb.load_global("sc", gs, layout_s, {group_row, bj * TC});
  Tensor w = b;
  if (fits) {
    if (p.wtype != at) w = pb.cast("w", b, at);
    if (zero_ptr) {
      Tensor gz = pb.view_global("gz", *zero_ptr, at, {k / G, n});
      Tensor z = pb.load_global("z", gz, layout_s, {group_row, bj * TC});
      w = pb.sub("w", w, z);
    }
    w = pb.mul("w", w, sc);  // one rounding of the exact product, as the matmul's reference says
  } else {
    Tensor w32 = pb.cast("w32", b, f32);
    Tensor s32 = pb.cast("s32", sc, f32);
    pb.mul(out(w32), w32, s32);
    w = pb.cast("w", w32, at);
  }
  pb.store_global(w, gw, {bi * TR, bj * TC});
  return pb.build();
}

}  // namespace tilevm::ops
