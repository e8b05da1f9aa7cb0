// examples/matmul_f16_i6.tile (figure 2 of the Tilus VM paper) and its weight transform, built from C++
// with the builder (include/tilevm/ir/builder.h). Read the .tile files for what the kernels do; this file
// shows the same programs statement by statement in C++. Run it to print both in the canonical text form,
// which is what `tilevm print` prints for the .tile files (tests/unit/example_builder_test.cpp checks it).
#include <cstdint>
#include <iostream>

#include "tilevm/ir/builder.h"
#include "tilevm/ir/printer.h"

namespace tilevm::examples {

// C[M, N] = A[M, K] @ B[K, N] with f16 A, i6 B pre-transformed to u8[K / BK, N / BN, BK * BN * 6 / 8].
inline ir::Program build_matmul_f16_i6(int64_t m = 64, int64_t n = 64, int64_t k = 128) {
  using namespace ir;
  const DataType f16 = DataType::f16(), f32 = DataType::f32(), u8 = DataType::u8(), i6 = DataType::int_(6);

  ProgramBuilder pb("matmul");
  const int64_t M = pb.constant("M", m), N = pb.constant("N", n), K = pb.constant("K", k);
  const int64_t BM = pb.constant("BM", 16), BN = pb.constant("BN", 8), BK = pb.constant("BK", 16);
  const layout::Layout layout_a = pb.named_layout("layout_a", "column_local(2, 2).spatial(8, 4).local(1, 2)");
  const layout::Layout layout_b = pb.named_layout("layout_b", "local(2, 1).column_spatial(4, 8).local(2, 1)");
  const layout::Layout layout_c = pb.named_layout("layout_c", "local(2, 1).spatial(8, 4).local(1, 2)");
  const layout::Layout layout_b_bytes = pb.named_layout("layout_b_bytes", "local(3).spatial(32)");

  Pointer a_ptr = pb.pointer_param("a_ptr", f16);
  Pointer b_ptr = pb.pointer_param("b_ptr", u8);
  Pointer c_ptr = pb.pointer_param("c_ptr", f16);
  pb.grid({M / BM, N / BN});

  auto [bi, bj] = pb.block_indices("bi", "bj");
  Tensor ga = pb.view_global("ga", a_ptr, f16, {M, K});
  Tensor gb = pb.view_global("gb", b_ptr, u8, {K / BK, N / BN, BK * BN * 6 / 8});
  Tensor gc = pb.view_global("gc", c_ptr, f16, {M, N});
  Tensor acc = pb.allocate_register("acc", f32, layout_c, 0.0);
  // bi and bj by name in the capture: clang 14 (the sanitizer build) cannot capture structured bindings.
  pb.for_range("bk", K / BK, [&, bi = bi, bj = bj](Scalar bk) {
    Tensor a = pb.load_global("a", ga, layout_a, {bi * BM, bk * BK});
    Tensor b_bytes = pb.load_global("b_bytes", gb, layout_b_bytes, {bk, bj, 0});
    Tensor b = pb.view("b", b_bytes, i6, layout_b);
    b = pb.cast("b", b, f16);
    pb.dot(out(acc), a, b, acc);
  });
  Tensor c = pb.cast("c", acc, f16);
  pb.store_global(c, gc, {bi * BM, bj * BN});
  return pb.build();
}

// The weight transform: i6[K, N] -> u8[K / BK, N / BN, BK * BN * 6 / 8], one block per [BK, BN] tile.
inline ir::Program build_matmul_f16_i6_transform(int64_t k = 128, int64_t n = 64) {
  using namespace ir;
  const DataType u8 = DataType::u8(), i6 = DataType::int_(6);

  ProgramBuilder pb("transform_b");
  const int64_t K = pb.constant("K", k), N = pb.constant("N", n);
  const int64_t BN = pb.constant("BN", 8), BK = pb.constant("BK", 16);
  const layout::Layout layout_b = pb.named_layout("layout_b", "local(2, 1).column_spatial(4, 8).local(2, 1)");
  const layout::Layout layout_b_bytes = pb.named_layout("layout_b_bytes", "local(3).spatial(32)");

  Pointer b_ptr = pb.pointer_param("b_ptr", i6);
  Pointer transformed_b_ptr = pb.pointer_param("transformed_b_ptr", u8);
  pb.grid({K / BK, N / BN});

  auto [bk, bj] = pb.block_indices("bk", "bj");
  Tensor gb = pb.view_global("gb", b_ptr, i6, {K, N});
  Tensor gt = pb.view_global("gt", transformed_b_ptr, u8, {K / BK, N / BN, BK * BN * 6 / 8});
  Tensor b = pb.load_global("b", gb, layout_b, {bk * BK, bj * BN});
  Tensor b_bytes = pb.view("b_bytes", b, u8, layout_b_bytes);
  pb.store_global(b_bytes, gt, {bk, bj, 0});
  return pb.build();
}

}  // namespace tilevm::examples

#ifndef TILEVM_EXAMPLE_NO_MAIN
int main() {
  std::cout << tilevm::ir::print_program(tilevm::examples::build_matmul_f16_i6_transform()) << "\n"
            << tilevm::ir::print_program(tilevm::examples::build_matmul_f16_i6());
  return 0;
}
#endif
