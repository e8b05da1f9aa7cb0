// The swapped form of the matmul program (QMatmulConfig::swapped, block_m 8): the weights are the mma's A
// operand and the activations its B operand, C^T[BN, 8] = W^T[BN, SK] @ A^T[SK, 8], read through the
// transposes of the fragment layouts (qmatmul_layouts.h). check_config admits it only for weights that fit
// ATYPE, so it has no f32 path. Zero points are subtracted from the converted codes through the transposed
// view of the same registers ([SK, BN], where a row of zeros broadcasts along k as in the plain form).
#include "qmatmul_stages.h"

namespace tilevm::ops {

ir::Program build_swapped_matmul(const QMatmulProblem& p, const QMatmulConfig& c) {
  using namespace ir;
  using layout::Layout;
  MatmulConstants k(p, c);
  ProgramBuilder& pb = k.pb;
  const DataType f32 = DataType::f32();
  const SliceLayouts l = slice_layouts(c, k.s, c.warps_m, 1);
  const Layout layout_a = pb.named_layout("layout_a", l.a);                 // A^T [SK, 8], for the Dot
  const Layout layout_a_load = pb.named_layout("layout_a_load", l.a_load);  // A [8, SK] as loaded
  const Layout layout_dot_c = pb.named_layout("layout_dot_c", l.dot_c);     // C^T [BN, 8]
  const Layout layout_b = pb.named_layout("layout_b", l.b);
  const Layout layout_bt = pb.named_layout("layout_bt", l.bt);
  const Layout layout_c = pb.named_layout("layout_c", l.c);  // [8, BN]: the same registers as layout_dot_c
  const std::optional<PairLayouts> pairs = named_pair_layouts(pb, pair_layouts(p, c, k.s, c.warps_m, 1));
  const Layout layout_sc = pb.named_layout("layout_sc", column_row(l.c));
  std::optional<Layout> layout_bz, layout_sz;  // the codes as [SK, BN], and a row of zeros over them
  if (p.zero_point) {
    layout_bz = pb.named_layout("layout_bz", l.b_read);
    layout_sz = pb.named_layout("layout_sz", column_row(l.b_read));
  }

  MatmulPipeline m(k);
  // With per-channel scales the Dot accumulates in its own C layout, relabelled after the loop.
  Tensor acc = pb.allocate_register("acc", f32, k.s.per_channel ? layout_dot_c : layout_c, 0.0);
  // Per channel, the one row of zero points is loaded once.
  std::optional<Tensor> zero_row;
  if (m.gz && k.s.per_channel) zero_row = pb.load_global("zero_row", *m.gz, *layout_sz, {0, m.bj * k.BN});

  m.loop([&](const Scalar& uk) {
    Tensor a = m.load_a(uk, layout_a_load);
    a = pb.view("ab", a, layout_a);
    Tensor bf = m.convert_codes(m.load_codes(uk, layout_bt), layout_b, pairs);
    if (m.gz) {
      // code - zero, exact (both integers of at most 8 bits), on the [SK, BN] view of the same registers.
      Tensor z = zero_row ? *zero_row : m.slice_row("z", (*m.smem_z)[m.cur()], *layout_sz, uk);
      Tensor wz = pb.sub("wz", pb.view("wt", bf, *layout_bz), z);
      bf = pb.view("bf", wz, layout_b);
    }
    // C^T += B^T @ A^T: the weights as the mma's A operand.
    if (k.s.per_channel) {
      pb.dot(out(acc), bf, a, acc);
      return;
    }
    Tensor part = pb.allocate_register("part", f32, layout_dot_c, 0.0);
    pb.dot(out(part), bf, a, part);
    part = pb.view("part_t", part, layout_c);  // [BN, 8] relabelled as [8, BN]
    Tensor sc = m.slice_row("sc", (*m.smem_s)[m.cur()], layout_sc, uk);
    Tensor sc32 = pb.cast("sc32", sc, f32);
    pb.fma(out(acc), part, sc32, acc);
  });
  m.store(k.s.per_channel ? pb.view("acc_t", acc, layout_c) : acc, layout_c);
  return pb.build();
}

}  // namespace tilevm::ops
