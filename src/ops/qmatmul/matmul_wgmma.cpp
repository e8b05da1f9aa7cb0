// The wgmma form of the matmul program (QMatmulConfig::wgmma, sm_90a): C^T[BN, BM] = W^T[BN, BK] @ A^T,
// the weights as wgmma's A operand (64 rows of C's columns per warpgroup) and the activations as its B
// operand, so that BM, the tokens, is the instruction's N (16 to 256) and a batch of 16 rows costs a
// 64 x 16 wgmma, not a 64-row tile of padding.
//
// Each step of the cp.async pipeline (qmatmul_stages.h):
//   codes of the stage -> registers, cast to ATYPE, minus the zeros, times the scales (one rounding, as the
//   dequantize program)      -> the dequantized tile w[b] in shared memory, 128-byte swizzled (b = step % 2)
//   Synchronize                                          (w[b] and the stage's activations are complete)
//   DotAsync(w[b], A tile, acc, transpose_b)             (the tensor cores start on this step)
//   DotAsyncWait(1)                                      (the previous step's product is done)
//   Synchronize                                          (in every warpgroup: the pipeline may refill its
//   stage)
// so the next step's codes are dequantized while this step's product runs. w has two buffers: a step
// writes the one that the product two steps back read, retired by the wait of the step before.
#include "qmatmul_stages.h"
#include "tilevm/target/wgmma.h"

namespace tilevm::ops {

ir::Program build_wgmma_matmul(const QMatmulProblem& p, const QMatmulConfig& c) {
  using namespace ir;
  using layout::Layout;
  MatmulConstants k(p, c);
  ProgramBuilder& pb = k.pb;
  const DataType at = p.atype, f32 = DataType::f32();
  const SliceLayouts l = slice_layouts(c, k.s, 1, 1);
  const Layout layout_w = pb.named_layout("layout_w", l.b);  // [BN, BK] as dequantized
  // The same registers as [BK, BN]: the scale and zero rows broadcast along k as in the other forms.
  const Layout layout_wt = pb.named_layout("layout_wt", layout::transpose(l.b));
  const Layout layout_bt = pb.named_layout("layout_bt", l.bt);
  const Layout layout_acc = pb.named_layout("layout_acc", l.dot_c);  // C^T [BN, BM]
  const Layout layout_c = pb.named_layout("layout_c", l.c);          // [BM, BN]: the same registers
  const Layout layout_sc = pb.named_layout("layout_sc", column_row(layout::transpose(l.b)));
  const Layout smem_w_layout =
      pb.named_layout("smem_w_layout", layout::local(2, 1, 1) * layout::local(1, c.block_k / 64) *
                                           target::wgmma_swizzled_tile(c.block_n, 64, 16, 128));

  MatmulPipeline m(k);
  Tensor smem_w = pb.allocate_shared("smem_w", at, smem_w_layout);
  Tensor acc = pb.allocate_register("acc", f32, layout_acc, 0.0);
  // Per channel, the one row of zero points is loaded once (the scales multiply C in m.store).
  std::optional<Tensor> zero_row;
  if (m.gz && k.s.per_channel) zero_row = pb.load_global("zero_row", *m.gz, layout_sc, {0, m.bj * k.BN});
  Scalar wbuf = pb.let("wbuf", 0);

  m.loop([&](const Scalar& uk) {
    Tensor w = m.convert_codes(m.load_codes(uk, layout_bt), layout_w, std::nullopt);
    Tensor wt = pb.view("wt", w, layout_wt);
    if (m.gz) {
      Tensor z = zero_row ? *zero_row : m.slice_row("z", (*m.smem_z)[m.cur()], layout_sc, uk);
      wt = pb.sub("wt", wt, z);
    }
    if (!k.s.per_channel) wt = pb.mul("wt", wt, m.slice_row("sc", (*m.smem_s)[m.cur()], layout_sc, uk));
    pb.store_shared(pb.view("ws", wt, layout_w), smem_w[wbuf]);
    pb.synchronize();
    pb.dot_async(smem_w[wbuf], m.smem_a[m.cur()], acc, DotOptions{.transpose_b = true});
    pb.dot_async_wait(1);
    pb.synchronize();
    pb.assign(wbuf, 1 - wbuf);
  });
  pb.dot_async_wait(0);
  m.store(pb.view("acc_t", acc, layout_c), layout_c);
  return pb.build();
}

}  // namespace tilevm::ops
