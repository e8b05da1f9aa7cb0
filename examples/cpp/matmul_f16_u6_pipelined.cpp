// examples/matmul_f16_u6_pipelined.tile (appendix B of the Tilus VM paper), built from C++ with the builder
// (include/tilevm/ir/builder.h): views, the three-stage cp.async ring, scalar variables updated in the
// loop, an if. Read the .tile file for what the kernel does. Run it to print the program in the canonical
// text form, which is what `tilevm print examples/matmul_f16_u6_pipelined.tile` prints
// (tests/unit/example_builder_test.cpp checks it).
#include <cstdint>
#include <iostream>

#include "tilevm/ir/builder.h"
#include "tilevm/ir/printer.h"

namespace tilevm::examples {

inline ir::Program build_matmul_f16_u6_pipelined(int64_t m = 16, int64_t n = 256, int64_t k = 512) {
  using namespace ir;
  const DataType f16 = DataType::f16(), f32 = DataType::f32(), u32 = DataType::u32(), u6 = DataType::uint(6);

  ProgramBuilder pb("matmul");
  const int64_t M = pb.constant("M", m), N = pb.constant("N", n), K = pb.constant("K", k);
  const int64_t BM = pb.constant("BM", 16), BN = pb.constant("BN", 32), BK = pb.constant("BK", 256);
  const int64_t STAGES = pb.constant("STAGES", 3);
  const int64_t SK = pb.constant("SK", 64), SK_WORDS = pb.constant("SK_WORDS", SK * BN * 6 / 32);
  const auto layout_a = pb.named_layout(
      "layout_a",
      "reduce(spatial(1, 1, 4), dims=[2]).local(1, 4).column_local(2, 2).spatial(8, 4).local(1, 2)");
  const auto layout_b =
      pb.named_layout("layout_b", "spatial(1, 4).local(4, 1).local(2, 1).column_spatial(4, 8).local(2, 1)");
  const auto layout_c = pb.named_layout("layout_c", "spatial(1, 4).local(2, 1).spatial(8, 4).local(1, 2)");
  const auto layout_b_t = pb.named_layout("layout_b_t", "spatial(4).local(3).spatial(32)");
  const auto smem_layout_a =
      pb.named_layout("smem_layout_a", "local(3, 1, 1).swizzle(local(16, 32), dim=1).local(1, 8)");
  const auto smem_layout_b = pb.named_layout("smem_layout_b", "local(3, 1536)");
  const auto smem_layout_c =
      pb.named_layout("smem_layout_c", "local(1, 2).swizzle(local(16, 4), dim=1, log_step=1).local(1, 8)");

  Pointer a_ptr = pb.pointer_param("a_ptr", f16);
  Pointer transformed_b_ptr = pb.pointer_param("transformed_b_ptr", u32);
  Pointer c_ptr = pb.pointer_param("c_ptr", f16);
  pb.grid({M / BM, N / BN});
  pb.threads(128);

  auto [bi, bj] = pb.block_indices("bi", "bj");
  Scalar offset_m = pb.let("offset_m", bi * BM);
  Scalar offset_n = pb.let("offset_n", bj * BN);
  Tensor gmem_a = pb.view_global("gmem_a", a_ptr, f16, {M, K});
  Tensor gmem_b = pb.view_global("gmem_b", transformed_b_ptr, u32, {K / BK, N / BN, BK * BN * 6 / 32});
  Tensor gmem_c = pb.view_global("gmem_c", c_ptr, f16, {M, N});
  Tensor smem_a = pb.allocate_shared("smem_a", f16, smem_layout_a);
  Tensor smem_b = pb.allocate_shared("smem_b", u32, smem_layout_b);
  Tensor acc = pb.allocate_register("acc", f32, layout_c, 0.0);

  // Prologue: the first STAGES - 1 k-tiles.
  Scalar offset_k;
  pb.for_range("stage", STAGES - 1, [&](Scalar stage) {
    offset_k = pb.let("offset_k", stage * BK);
    pb.copy_async(smem_a[stage], gmem_a(from(offset_m), from(offset_k)));
    pb.copy_async(smem_b[stage], gmem_b(offset_k / BK, offset_n / BN, all));
    pb.copy_async_commit_group();
  });
  pb.copy_async_wait_group(1);
  pb.synchronize();

  Scalar current_stage = pb.let("current_stage", 0);
  Scalar preload_stage = pb.let("preload_stage", STAGES - 1);
  pb.for_range("bk", K / BK, [&](Scalar bk) {
    pb.for_range("uk", BK / SK, [&](Scalar uk) {
      Tensor regs_a = pb.load_shared("regs_a", smem_a(current_stage, all, from(uk * SK)), layout_a);
      Tensor regs_b_t = pb.load_shared("regs_b_t", smem_b(current_stage, from(uk * SK_WORDS)), layout_b_t);
      Tensor regs_b = pb.view("regs_b", regs_b_t, u6, layout_b);
      regs_b = pb.cast("regs_b", regs_b, f16);
      pb.dot(out(acc), regs_a, regs_b, acc);
    });
    pb.assign(offset_k, (bk + STAGES - 1) * BK);
    pb.if_(offset_k < K, [&] {
      pb.copy_async(smem_a[preload_stage], gmem_a(from(offset_m), from(offset_k)));
      pb.copy_async(smem_b[preload_stage], gmem_b(offset_k / BK, offset_n / BN, all));
    });
    pb.copy_async_commit_group();
    pb.assign(current_stage, (current_stage + 1) % STAGES);
    pb.assign(preload_stage, (preload_stage + 1) % STAGES);
    pb.copy_async_wait_group(1);
    pb.synchronize();
  });

  // Epilogue: stage the result in shared memory for a coalesced store.
  acc = pb.cast("acc", acc, f16);
  Tensor smem_c = pb.allocate_shared("smem_c", f16, smem_layout_c);
  pb.store_shared(acc, smem_c);
  pb.synchronize();
  acc = pb.load_shared("acc", smem_c, "spatial(16, 8).repeat(1, 4)");
  pb.store_global(acc, gmem_c(from(offset_m), from(offset_n)));
  return pb.build();
}

}  // namespace tilevm::examples

#ifndef TILEVM_EXAMPLE_NO_MAIN
int main() {
  std::cout << tilevm::ir::print_program(tilevm::examples::build_matmul_f16_u6_pipelined());
  return 0;
}
#endif
