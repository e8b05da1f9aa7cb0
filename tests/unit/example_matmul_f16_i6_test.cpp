// examples/matmul_f16_i6.tile (figure 2 of the Tilus VM paper) and its weight transform
// examples/matmul_f16_i6_transform.tile, run on the interpreter: the transform against the definition of
// View, the matmul (on the transformed weights) against a double-precision reference.
#include <gtest/gtest.h>

#include "example_util.h"
#include "tilevm/layout/layout_text.h"

namespace tilevm::example_test {
namespace {

constexpr int64_t kM = 64, kN = 64, kK = 128, kBN = 8, kBK = 16;
const DataType kI6 = DataType::int_(6);

// Runs the transform on random i6 codes and checks the bytes it writes; returns them (empty on failure).
std::vector<uint8_t> transform(const std::vector<uint64_t>& b_codes) {
  auto program = load_example("matmul_f16_i6_transform.tile");
  if (!program) return {};
  std::vector<uint8_t> b = pack(kI6, b_codes);
  std::vector<uint8_t> transformed = poisoned(kK * kN * 6 / 8);
  if (!run(*program, {{"b_ptr", &b}, {"transformed_b_ptr", &transformed}}, "matmul_f16_i6_transform.tile"))
    return {};
  std::vector<uint8_t> expected = reference_transform(
      b_codes, 6, kK, kN, kBK, kBN, kBK, layout::parse_layout("local(2, 1).column_spatial(4, 8).local(2, 1)"),
      8, layout::parse_layout("local(3).spatial(32)"));
  EXPECT_EQ(transformed, expected) << "the transformed weights differ from the reference";
  return transformed;
}

TEST(ExampleMatmulF16I6, TransformMatchesTheDefinitionOfView) {
  std::vector<uint64_t> b_codes = random_codes(kK * kN, 6, 7);
  EXPECT_FALSE(transform(b_codes).empty());
}

TEST(ExampleMatmulF16I6, MatchesReference) {
  for (uint32_t seed : {1u, 2u}) {
    SCOPED_TRACE(seed);
    std::vector<uint64_t> b_codes = random_codes(kK * kN, 6, 100 + seed);
    std::vector<uint8_t> transformed = transform(b_codes);
    ASSERT_FALSE(transformed.empty());
    auto program = load_example("matmul_f16_i6.tile");
    ASSERT_TRUE(program);
    F16Matrix a = random_f16(kM * kK, seed);
    std::vector<uint8_t> c = poisoned(kM * kN * 2);
    ASSERT_TRUE(
        run(*program, {{"a_ptr", &a.bytes}, {"b_ptr", &transformed}, {"c_ptr", &c}}, "matmul_f16_i6.tile"));
    expect_f16_near(c, reference_matmul(a.values, b_codes, kI6, kM, kN, kK), kN);
  }
}

}  // namespace
}  // namespace tilevm::example_test
