// The quantized-matmul programs (qmatmul.h), written with the IR builder: the transform, the matmul's
// dispatch to its forms (qmatmul_stages.h: plain, swapped, warps along K), and dequant_gemm's
// copy and dequantize. Sizes come from QMatmulShape (qmatmul_shape.h), layouts from qmatmul_layouts.h,
// validation from check_config (qmatmul_config.cpp).
#include "tilevm/ops/qmatmul/qmatmul.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "qmatmul_layouts.h"
#include "qmatmul_shape.h"
#include "qmatmul_stages.h"
#include "tilevm/ir/builder.h"
#include "tilevm/ir/printer.h"
#include "tilevm/layout/layout.h"
#include "tilevm/support/error.h"

namespace tilevm::ops {

using layout::Layout;

namespace {

// The fused template's programs exist for a valid configuration that is not dequant_gemm.
void check_fused_config(const QMatmulProblem& p, const QMatmulConfig& c, const char* program) {
  check_config(p, c);
  if (c.dequant_gemm)
    fail("qmatmul: the dequant_gemm configuration has no {} program (it runs dequantize, then cuBLAS)",
         program);
}

}  // namespace

ir::Program build_qmatmul_transform(const QMatmulProblem& p, const QMatmulConfig& c) {
  using namespace ir;
  check_fused_config(p, c, "qmatmul_transform");
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
  const auto indices = pb.block_indices("kt", "nt");
  const Scalar kt = indices[0], nt = indices[1];  // (the loop's lambda captures them: no structured binding)
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

std::string qmatmul_layout(const QMatmulProblem& p, const QMatmulConfig& c) {
  if (c.dequant_gemm) return "packed";
  // The program's text names every constant and layout that places a code; M appears nowhere in it.
  const size_t h = std::hash<std::string>{}(ir::print_program(build_qmatmul_transform(p, c)));
  return fmt::format("transform-{:016x}", static_cast<uint64_t>(h));
}

ir::Program build_qmatmul(const QMatmulProblem& p, const QMatmulConfig& c) {
  check_fused_config(p, c, "qmatmul");
  if (c.warp_specialized) return build_wgmma_ws_matmul(p, c);
  if (c.wgmma) return build_wgmma_matmul(p, c);
  if (c.swapped()) return build_swapped_matmul(p, c);
  if (c.warps_k > 1) return build_warps_k_matmul(p, c);
  return build_plain_matmul(p, c);
}

ir::Program build_qmatmul_copy(const QMatmulProblem& p) {
  using namespace ir;
  check_problem(p);
  const DataType u32 = DataType::uint(32);
  ProgramBuilder pb("qmatmul_copy");
  const int64_t TW = pb.constant("TW", 1024);
  const Layout layout_w = pb.named_layout("layout_w", layout::spatial(256) * layout::local(4));
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
  const Layout layout_d =
      pb.named_layout("layout_d", layout::local(2, 1) * layout::spatial(8, 32) * layout::local(1, 8));
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
