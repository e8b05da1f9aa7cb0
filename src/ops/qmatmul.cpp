#include "tilevm/ops/qmatmul.h"

#include <cmath>
#include <string>

#include "tilevm/ir/builder.h"
#include "tilevm/layout/layout.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"

namespace tilevm::ops {

bool qmatmul_weight_fits_f16(DataType wtype) {
  if (wtype.is_integer()) return wtype.bits() <= 11;  // every integer of 11 bits or fewer is exact in f16
  if (!wtype.is_float()) return false;
  if (wtype.bits() > 16) return false;
  const DataType f16 = DataType::f16();
  for (uint64_t code = 0; code < (uint64_t{1} << wtype.bits()); ++code) {
    const double v = decode(wtype, code);
    if (!std::isfinite(v)) continue;
    if (decode(f16, encode(f16, v)) != v) return false;
  }
  return true;
}

namespace {

void check_config(const QMatmulConfig& c) {
  const DataType w = c.wtype;
  if (c.atype != DataType::f16()) throw Error("qmatmul: atype must be f16, got " + c.atype.name());
  if (w.is_bool() || w.bits() < 1 || w.bits() > 8 || !(w.is_integer() || w.is_float()))
    throw Error("qmatmul: wtype must be an integer or float type of 1 to 8 bits, got " + w.name());
  if (c.block_m <= 0 || c.block_m % 16 != 0)
    throw Error("qmatmul: block_m must be a positive multiple of 16, got " + std::to_string(c.block_m));
  if (c.block_n <= 0 || c.block_n % 8 != 0)
    throw Error("qmatmul: block_n must be a positive multiple of 8, got " + std::to_string(c.block_n));
  if (c.block_k <= 0 || c.block_k % 16 != 0)
    throw Error("qmatmul: block_k must be a positive multiple of 16, got " + std::to_string(c.block_k));
  if (c.group <= 0 || c.group % c.block_k != 0)
    throw Error("qmatmul: block_k (" + std::to_string(c.block_k) + ") must divide the group size (" +
                std::to_string(c.group) + ")");
}

}  // namespace

ir::Program build_qmatmul(const QMatmulConfig& config) {
  using namespace ir;
  check_config(config);
  const DataType f16 = DataType::f16(), f32 = DataType::f32(), i32 = DataType::i32(), wtype = config.wtype;

  ProgramBuilder pb("qmatmul");
  const int64_t BM = pb.constant("BM", config.block_m), BN = pb.constant("BN", config.block_n);
  const int64_t BK = pb.constant("BK", config.block_k), G = pb.constant("G", config.group);
  // The mma.m16n8k16 fragments (target/atoms.h), repeated in each thread's registers over the block's
  // (BM / 16) x (BK / 16) A tiles, (BK / 16) x (BN / 8) B tiles and (BM / 16) x (BN / 8) C tiles.
  const layout::Layout mma_a = layout::parse_layout("column_local(2, 2).spatial(8, 4).local(1, 2)");
  const layout::Layout mma_b = layout::parse_layout("local(2, 1).column_spatial(4, 8).local(2, 1)");
  const layout::Layout mma_c = layout::parse_layout("local(2, 1).spatial(8, 4).local(1, 2)");
  const layout::Layout layout_a =
      pb.named_layout("layout_a", layout::compose(layout::local({BM / 16, BK / 16}), mma_a));
  const layout::Layout layout_b =
      pb.named_layout("layout_b", layout::compose(layout::local({BK / 16, BN / 8}), mma_b));
  const layout::Layout layout_c =
      pb.named_layout("layout_c", layout::compose(layout::local({BM / 16, BN / 8}), mma_c));
  // [1, BN]: the B layout with dim 0 reduced away (its threads along K become replicas) and put back with
  // extent 1, so every thread holds the scale of each column it holds of B (the elementwise broadcast rule).
  const layout::Layout layout_s =
      pb.named_layout("layout_s", layout::insert_dim(layout::reduce(layout_b, {0}), 0));

  Pointer a_ptr = pb.pointer_param("a_ptr", f16);
  Pointer b_ptr = pb.pointer_param("b_ptr", wtype);
  Pointer scale_ptr = pb.pointer_param("scale_ptr", f16);
  Pointer c_ptr = pb.pointer_param("c_ptr", f16);
  Scalar m = pb.scalar_param("m", i32), n = pb.scalar_param("n", i32), k = pb.scalar_param("k", i32);
  pb.grid({ceil_div(m, BM), ceil_div(n, BN)});

  auto [bi, bj] = pb.block_indices("bi", "bj");
  Tensor ga = pb.view_global("ga", a_ptr, f16, {m, k});
  Tensor gb = pb.view_global("gb", b_ptr, wtype, {k, n});
  Tensor gs = pb.view_global("gs", scale_ptr, f16, {k / G, n});
  Tensor gc = pb.view_global("gc", c_ptr, f16, {m, n});
  Tensor acc = pb.allocate_register("acc", f32, layout_c, 0.0);
  const bool direct = qmatmul_weight_fits_f16(wtype);
  pb.for_range("bk", k / BK, [&](Scalar bk) {
    Tensor a = pb.load_global("a", ga, layout_a, {bi * BM, bk * BK});
    Tensor b = pb.load_global("b", gb, layout_b, {bk * BK, bj * BN});
    Tensor s = pb.load_global("s", gs, layout_s, {bk / (G / BK), bj * BN});
    const Tensor bf = [&] {
      if (direct) {
        // Every weight value is exact in f16, so the f16 product is the correctly rounded decode * scale.
        Tensor b16 = pb.cast("bf", b, f16);
        return pb.mul("bf", b16, s);
      }
      // Wider exponent range than f16 (f8e6m1, ...): scale in f32 (exact: at most 24 significant bits),
      // then round once to f16.
      Tensor b32 = pb.cast("b32", b, f32);
      Tensor s32 = pb.cast("s32", s, f32);
      b32 = pb.mul("b32", b32, s32);
      return pb.cast("bf", b32, f16);
    }();
    pb.dot(out(acc), a, bf, acc);
  });
  Tensor c = pb.cast("c", acc, f16);
  pb.store_global(c, gc, {bi * BM, bj * BN});
  return pb.build();
}

}  // namespace tilevm::ops
