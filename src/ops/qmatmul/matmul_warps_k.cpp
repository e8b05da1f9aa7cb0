// The matmul program with warps along K (QMatmulConfig::warps_k > 1, decode): each group of warps multiplies
// its own slices of every stage (a batched Dot, the batch over the groups: rank-3 operands,
// qmatmul_layouts.h) and the groups' [BM, BN] tiles are summed through shared memory after the loop.
// check_config admits it only for weights that fit ATYPE and slice_k == G, so each group scales its own
// slices and there is no f32 path.
#include "qmatmul_stages.h"

namespace tilevm::ops {

ir::Program build_warps_k_matmul(const QMatmulProblem& p, const QMatmulConfig& c) {
  using namespace ir;
  using layout::Layout;
  MatmulConstants k(p, c);
  ProgramBuilder& pb = k.pb;
  const DataType f32 = DataType::f32();
  const SliceLayouts l = slice_layouts(c, k.s, c.warps_m, c.warps_k);
  const Layout layout_a = pb.named_layout("layout_a", l.a);                 // [WK, BM, SK], for the Dot
  const Layout layout_a_load = pb.named_layout("layout_a_load", l.a_load);  // [BM, WK * SK] as loaded
  const Layout layout_b = pb.named_layout("layout_b", l.b);
  const Layout layout_bt = pb.named_layout("layout_bt", l.bt);
  const Layout layout_c = pb.named_layout("layout_c", l.c);
  const std::optional<PairLayouts> pairs =
      named_pair_layouts(pb, pair_layouts(p, c, k.s, c.warps_m, c.warps_k));
  // Per-column values (scales, zeros) in the columns a thread holds of `lay`: each group's own row of a
  // [WK, BN] tile (loaded as one), viewed as [WK, 1, BN] for the broadcast.
  auto group_rows = [&](const std::string& name, const Layout& lay) {
    const Layout rows = layout::reduce(lay, {1});
    return std::pair{pb.named_layout(name, rows), pb.named_layout(name + "3", layout::insert_dim(rows, 1))};
  };
  // (Named pairs, not structured bindings: the lambdas below capture them, which C++20 allows and clang 15
  // does not.)
  const std::pair<Layout, Layout> scale_rows = group_rows("layout_sc", l.c);
  const Layout& layout_sc = scale_rows.first;
  const Layout& layout_sc3 = scale_rows.second;
  std::pair<Layout, Layout> zero_rows;  // in the codes' columns
  if (p.zero_point) zero_rows = group_rows("layout_sb", l.b);
  const Layout& layout_sb = zero_rows.first;
  const Layout& layout_sb3 = zero_rows.second;

  MatmulPipeline m(k);
  // After the loop: the groups' tiles summed, each thread a run of columns of the [BM, BN] sum.
  const int64_t per_thread = c.block_m * c.block_n / c.threads();
  const Layout layout_o = pb.named_layout(
      "layout_o", layout::spatial(c.block_m, c.block_n / per_thread) * layout::local(1, per_thread));
  Tensor acc = pb.allocate_register("acc", f32, layout_c, 0.0);
  // Per channel, the single row of zero points, [1, BN] with every group holding the same columns, viewed
  // as [1, 1, BN].
  std::optional<Tensor> zero_row;
  if (m.gz && k.s.per_channel) {
    const Layout row = column_row(layout::reduce(l.b, {0}));
    Tensor r = pb.load_global("zero_row", *m.gz, pb.named_layout("layout_zrow", row), {0, m.bj * k.BN});
    zero_row = pb.view("zero_row3", r, pb.named_layout("layout_zrow3", layout::insert_dim(row, 0)));
  }
  // The WK rows of step uk's WK slices (slice_k == G) from a stage's [SROWS, BN] shared tile.
  auto step_rows = [&](const std::string& name, const TensorRef& smem, const Layout& rows,
                       const Layout& rows3, const Scalar& uk) {
    Tensor t = pb.load_shared(name, smem, rows, {uk * k.WK, 0});
    return pb.view(name + "3", t, rows3);
  };

  m.loop([&](const Scalar& uk) {
    Tensor a = m.load_a(uk, layout_a_load);
    a = pb.view("a3", a, layout_a);
    Tensor bt = m.load_codes(uk, layout_bt);
    Tensor bf = m.convert_codes(bt, layout_b, pairs);
    std::function<Tensor()> zeros;
    if (m.smem_z || zero_row)
      zeros = [&] {
        return zero_row ? *zero_row : step_rows("z", (*m.smem_z)[m.cur()], layout_sb, layout_sb3, uk);
      };
    m.accumulate(acc, a, bf, layout_c, zeros,
                 [&] { return step_rows("sc", (*m.smem_s)[m.cur()], layout_sc, layout_sc3, uk); });
  });

  // The WK groups' [BM, BN] tiles summed through shared memory: each thread adds the WK values of its own
  // run of columns.
  Tensor parts = pb.allocate_shared("parts", f32, {k.WK, k.BM, k.BN});
  pb.store_shared(acc, parts);
  pb.synchronize();
  const Layout layout_parts = pb.named_layout("layout_parts", layout::local(c.warps_k, 1, 1) * layout_o);
  Tensor all = pb.load_shared("all", parts, layout_parts);
  m.store(pb.reduce_sum("total", all, 0), layout_o);
  return pb.build();
}

}  // namespace tilevm::ops
