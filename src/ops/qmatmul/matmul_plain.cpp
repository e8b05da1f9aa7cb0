// The plain form of the matmul program (qmatmul.h): warps along M and N only, block_m a multiple of 16. The
// only form with the f32 path (weights whose values do not fit ATYPE) and, with warps along K, zero points.
#include "qmatmul_stages.h"

namespace tilevm::ops {

ir::Program build_plain_matmul(const QMatmulProblem& p, const QMatmulConfig& c) {
  using namespace ir;
  using layout::Layout;
  MatmulConstants k(p, c);
  ProgramBuilder& pb = k.pb;
  const DataType at = p.atype, f32 = DataType::f32();
  const SliceLayouts l = slice_layouts(c, k.s, c.warps_m, 1);
  const Layout layout_a = pb.named_layout("layout_a", l.a);
  const Layout layout_b = pb.named_layout("layout_b", l.b);
  const Layout layout_bt = pb.named_layout("layout_bt", l.bt);
  const Layout layout_c = pb.named_layout("layout_c", l.c);
  const std::optional<PairLayouts> pairs = named_pair_layouts(pb, pair_layouts(p, c, k.s, c.warps_m, 1));
  // Scales multiply the f32 tile (layout_c's columns); zeros, and scales on the f32 path, the codes
  // (layout_b's columns).
  const Layout layout_sc = pb.named_layout("layout_sc", column_row(l.c));
  std::optional<Layout> layout_sb;
  if (p.zero_point || !k.fits) layout_sb = pb.named_layout("layout_sb", column_row(l.b));

  MatmulPipeline m(k);
  Tensor acc = pb.allocate_register("acc", f32, layout_c, 0.0);
  // Per channel, the single row of zero points (and, on the f32 path, of scales) is loaded once, in the
  // layout of B's columns.
  std::optional<Tensor> zero_row, scale_row;
  if (m.gz && k.s.per_channel) zero_row = pb.load_global("zero_row", *m.gz, *layout_sb, {0, m.bj * k.BN});
  if (!k.fits && k.s.per_channel) scale_row = pb.load_global("scale_row", m.gs, *layout_sb, {0, m.bj * k.BN});

  m.loop([&](const Scalar& uk) {
    Tensor a = m.load_a(uk, layout_a);
    Tensor bt = m.load_codes(uk, layout_bt);
    if (!k.fits) {
      // The weight's values do not all fit the activation type (a float with more exponent range):
      // dequantize each weight in f32 and round the product once to ATYPE.
      Tensor b = pb.view("b", bt, p.wtype, layout_b);
      Tensor b32 = pb.cast("b32", b, f32);
      Tensor sb = scale_row ? *scale_row : m.slice_row("sb", (*m.smem_s)[m.cur()], *layout_sb, uk);
      Tensor sb32 = pb.cast("sb32", sb, f32);
      pb.mul(out(b32), b32, sb32);
      Tensor bf = pb.cast("bf", b32, at);
      pb.dot(out(acc), a, bf, acc);
      return;
    }
    Tensor bf = m.convert_codes(bt, layout_b, pairs);
    std::function<Tensor()> zeros;
    if (m.smem_z || zero_row)
      zeros = [&] { return zero_row ? *zero_row : m.slice_row("z", (*m.smem_z)[m.cur()], *layout_sb, uk); };
    m.accumulate(acc, a, bf, layout_c, zeros,
                 [&] { return m.slice_row("sc", (*m.smem_s)[m.cur()], layout_sc, uk); });
  });
  m.store(acc, layout_c);
  return pb.build();
}

}  // namespace tilevm::ops
