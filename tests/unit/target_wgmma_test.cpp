// target/wgmma.h and target/tma_swizzle.h: the wgmma accumulator fragment element by element against the
// PTX ISA's table, the K-major operand forms (found with the right strides, wrong layouts rejected with the
// first misplaced element), and which TMA destination layouts carry which swizzle.
#include <gtest/gtest.h>

#include "tilevm/layout/layout.h"
#include "tilevm/support/error.h"
#include "tilevm/target/tma_swizzle.h"
#include "tilevm/target/wgmma.h"

namespace tilevm::target {
namespace {

using layout::compose;
using layout::local;

// PTX ISA, "Register fragments" of wgmma .m64nNk16 D (f32): thread 32 w + l, register i holds
// row 16 w + l / 4 + 8 ((i % 4) / 2), column 8 (i / 4) + 2 (l % 4) + i % 2.
TEST(TargetWgmma, AccumulatorIsThePtxFragment) {
  for (int64_t n : {8, 64, 256}) {
    const layout::Layout f = wgmma_accumulator(n);
    ASSERT_EQ(f.num_threads(), 128);
    ASSERT_EQ(f.num_locals(), n / 2);
    for (int64_t t = 0; t < 128; ++t)
      for (int64_t i = 0; i < n / 2; ++i) {
        const int64_t w = t / 32, l = t % 32;
        const layout::Index want{16 * w + l / 4 + 8 * ((i % 4) / 2), 8 * (i / 4) + 2 * (l % 4) + i % 2};
        ASSERT_EQ(f.map(t, i), want) << "n " << n << " thread " << t << " register " << i;
      }
  }
}

TEST(TargetWgmma, TilingOfTwoWarpgroups) {
  std::string why;
  const layout::Layout c = compose(layout::spatial({2, 1}), wgmma_accumulator(256));
  const std::optional<WgmmaTiling> t = wgmma_tiling(DataType::f16(), DataType::f32(), c, &why);
  ASSERT_TRUE(t) << why;
  EXPECT_EQ(t->n, 256);
  EXPECT_EQ(t->quotient.num_threads(), 2);
  EXPECT_EQ(t->quotient.num_locals(), 1);
  EXPECT_FALSE(wgmma_tiling(DataType::f32(), DataType::f32(), c, &why));
  EXPECT_NE(why.find("f16 into f32"), std::string::npos) << why;
}

std::optional<WgmmaSharedForm> form_of(const layout::Layout& l, int bits, std::string* why) {
  return wgmma_operand_form(l, bits, why);
}

TEST(TargetWgmma, SwizzledFormsAndTheirStrides) {
  std::string why;
  for (int s : {32, 64, 128}) {
    const int64_t k = s / 2;  // f16 elements of one swizzled row
    const layout::Layout tile = wgmma_swizzled_tile(64, k, 16, s);
    const std::optional<WgmmaSharedForm> f = form_of(tile, 16, &why);
    ASSERT_TRUE(f) << s << ": " << why;
    EXPECT_EQ(f->swizzle_bytes, s);
    EXPECT_EQ(f->sbo_bytes, 8 * s);  // groups of 8 rows stacked
    // Stages stacked in front keep the form; 8-bit elements too.
    EXPECT_TRUE(form_of(compose(local({3, 1, 1}), tile), 16, &why)) << why;
    EXPECT_TRUE(form_of(wgmma_swizzled_tile(64, s, 8, s), 8, &why)) << why;
  }
  // Two swizzle atoms along K (rows of 2 x 128 bytes), the atoms of a row group side by side: K steps past
  // the first 64 elements go through the start address (k_group_bytes), row groups are 2048 bytes apart.
  const layout::Layout wide =
      compose(local({8, 2}), layout::make_swizzle(local({8, 8}), 1, 0), local({1, 8}));
  const std::optional<WgmmaSharedForm> f = form_of(wide, 16, &why);
  ASSERT_TRUE(f) << why;
  EXPECT_EQ(f->swizzle_bytes, 128);
  EXPECT_EQ(f->sbo_bytes, 2048);
  EXPECT_EQ(f->k_group_bytes, 1024);
  EXPECT_EQ(wgmma_block_offset(*f, 8, 64 + 16, 16), 2048 + 1024 + 32);
}

TEST(TargetWgmma, CoreMatricesWithoutSwizzle) {
  // 8 x 8 f16 core matrices (128 contiguous bytes), K-adjacent ones 128 bytes apart, row groups 512 apart.
  std::string why;
  const layout::Layout tile = compose(local({4, 4}), local({8, 8}));  // [32, 32]
  const std::optional<WgmmaSharedForm> f = form_of(tile, 16, &why);
  ASSERT_TRUE(f) << why;
  EXPECT_EQ(f->swizzle_bytes, 0);
  EXPECT_EQ(f->lbo_bytes, 128);
  EXPECT_EQ(f->sbo_bytes, 512);
}

TEST(TargetWgmma, RowMajorIsNoForm) {
  std::string why;
  EXPECT_FALSE(form_of(local({64, 64}), 16, &why));
  EXPECT_NE(why.find("element (1, 0) is at offset 64"), std::string::npos) << why;
  // A stage that breaks the pattern: the second stage's rows in another order.
  const layout::Layout two = compose(local({2, 1, 1}), wgmma_swizzled_tile(8, 64, 16, 128));
  EXPECT_TRUE(form_of(two, 16, &why)) << why;
  EXPECT_FALSE(form_of(layout::column_local({2, 8, 64}), 16, &why));
}

TEST(TargetWgmma, RememberedAnswersAreTheSame) {
  // wgmma_operand_form remembers recent answers: asking again, or with the other element width, gives what
  // the first question gave, the reason included.
  std::string first, again;
  EXPECT_FALSE(form_of(local({64, 64}), 16, &first));
  EXPECT_FALSE(form_of(local({64, 64}), 16, &again));
  EXPECT_EQ(first, again);
  const layout::Layout tile = wgmma_swizzled_tile(64, 64, 16, 128);
  ASSERT_TRUE(form_of(tile, 16, &first)) << first;
  EXPECT_EQ(form_of(tile, 16, &again)->swizzle_bytes, 128);
  // The same layout holds 8-bit elements as a 64-byte swizzle would not: 64 elements are 64 bytes.
  EXPECT_FALSE(form_of(tile, 8, &again));
  for (int k = 0; k < 40; ++k) form_of(compose(local({k + 1, 1, 1}), tile), 16, &again);  // past the memo
  EXPECT_EQ(form_of(tile, 16, &again)->swizzle_bytes, 128);
}

TEST(TargetTmaSwizzle, WhichLayoutsCarryWhichSwizzle) {
  EXPECT_EQ(tma_swizzle_bytes(local({2, 16, 64}), 16), 0);
  EXPECT_EQ(tma_swizzle_bytes(compose(local({2, 1, 1}), wgmma_swizzled_tile(16, 64, 16, 128)), 16), 128);
  EXPECT_EQ(tma_swizzle_bytes(wgmma_swizzled_tile(16, 32, 16, 64), 16), 64);
  EXPECT_EQ(tma_swizzle_bytes(wgmma_swizzled_tile(16, 16, 16, 32), 16), 32);
  EXPECT_EQ(tma_swizzle_bytes(wgmma_swizzled_tile(16, 128, 8, 128), 8), 128);
  // A swizzle the TMA does not write (the XOR on the other dimension) and a column-major tile.
  EXPECT_EQ(
      tma_swizzle_bytes(compose(local({2, 1}), layout::make_swizzle(local({8, 8}), 0, 0), local({1, 8})), 16),
      -1);
  EXPECT_EQ(tma_swizzle_bytes(layout::column_local({16, 64}), 16), -1);
  EXPECT_THROW(wgmma_swizzled_tile(16, 48, 16, 128), Error);
}

}  // namespace
}  // namespace tilevm::target
