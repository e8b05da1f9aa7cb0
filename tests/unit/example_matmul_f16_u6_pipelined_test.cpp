// examples/matmul_f16_u6_pipelined.tile (appendix B of the Tilus VM paper: three cp.async stages, swizzled
// shared layouts, 128 threads) with its weight transform, run on the interpreter against a double-precision
// reference; and examples/matmul_f16_u6_pipelined_race.tile, the same kernel with one Synchronize()
// removed, which the interpreter must report as a race at the read.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <iostream>

#include <gtest/gtest.h>

#include "example_util.h"
#include "tilevm/layout/layout_text.h"

namespace tilevm::example_test {
namespace {

const DataType kU6 = DataType::uint(6);
constexpr int64_t kM = 16, kBN = 32, kBK = 256, kSK = 64;

struct Shape {
  int64_t N, K;
  std::map<std::string, std::string> defines() const {
    return {{"N", std::to_string(N)}, {"K", std::to_string(K)}};
  }
};

struct Inputs {
  F16Matrix a;
  std::vector<uint64_t> b_codes;
  std::vector<uint8_t> transformed;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Random A and B, and B transformed by the transform program (checked against the definition of View).
Inputs make_inputs(const Shape& s, uint32_t seed) {
  Inputs in;
  in.a = random_f16(kM * s.K, seed);
  in.b_codes = random_codes(s.K * s.N, 6, seed + 1000);
  auto program = load_example("matmul_f16_u6_pipelined_transform.tile", s.defines());
  if (!program) return in;
  std::vector<uint8_t> b = pack(kU6, in.b_codes);
  std::vector<uint8_t> transformed = poisoned(s.K * s.N * 6 / 8);
  auto start = std::chrono::steady_clock::now();
  if (!run(*program, {{"b_ptr", &b}, {"transformed_b_ptr", &transformed}},
           "matmul_f16_u6_pipelined_transform.tile")) {
    return in;
  }
  std::cout << "[ timing   ] transform u6[" << s.K << ", " << s.N
            << "] on the interpreter: " << seconds_since(start) << " s\n";
  std::vector<uint8_t> expected = reference_transform(
      in.b_codes, 6, s.K, s.N, kBK, kBN, kSK,
      layout::parse_layout("spatial(1, 4).local(4, 1).local(2, 1).column_spatial(4, 8).local(2, 1)"), 32,
      layout::parse_layout("spatial(4).local(3).spatial(32)"));
  EXPECT_EQ(transformed, expected) << "the transformed weights differ from the reference";
  in.transformed = std::move(transformed);
  return in;
}

void check_matmul(const Shape& s, uint32_t seed) {
  Inputs in = make_inputs(s, seed);
  ASSERT_FALSE(in.transformed.empty());
  auto program = load_example("matmul_f16_u6_pipelined.tile", s.defines());
  ASSERT_TRUE(program);
  std::vector<uint8_t> c = poisoned(kM * s.N * 2);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(run(*program, {{"a_ptr", &in.a.bytes}, {"transformed_b_ptr", &in.transformed}, {"c_ptr", &c}},
                  "matmul_f16_u6_pipelined.tile"));
  double elapsed = seconds_since(start);
  std::cout << "[ timing   ] matmul M=" << kM << " N=" << s.N << " K=" << s.K
            << " on the interpreter (one core): " << elapsed << " s\n";
  ::testing::Test::RecordProperty("interpreter_seconds", std::to_string(elapsed));
  expect_f16_near(c, reference_matmul(in.a.values, in.b_codes, kU6, kM, s.N, s.K), s.N);
}

// The size the example is written for (the file's defaults): M = 16, N = 256, K = 512.
TEST(ExampleMatmulF16U6Pipelined, MatchesReferenceAtDefaultSize) {
  check_matmul({256, 512}, 1);
}

// A longer K, so that the three-stage ring wraps around (6 k-tiles) and the preloads really overlap.
TEST(ExampleMatmulF16U6Pipelined, MatchesReferenceWhenThePipelineWraps) {
  check_matmul({64, 1536}, 2);
}

TEST(ExampleMatmulF16U6Pipelined, MissingSynchronizeIsReportedAsRace) {
  const Shape s{256, 512};
  Inputs in = make_inputs(s, 3);
  ASSERT_FALSE(in.transformed.empty());
  const std::string file = "matmul_f16_u6_pipelined_race.tile";
  auto program = load_example(file, s.defines());
  ASSERT_TRUE(program);
  std::vector<uint8_t> c = poisoned(kM * s.N * 2);
  Diagnostics diags;
  EXPECT_FALSE(run(*program, {{"a_ptr", &in.a.bytes}, {"transformed_b_ptr", &in.transformed}, {"c_ptr", &c}},
                   file, &diags));
  ASSERT_TRUE(diags.has_errors()) << "the interpreter reported nothing";
  const std::string source = read_text(example_path(file));
  const int read_line = line_of(source, "acc = LoadShared(smem_c");
  ASSERT_GT(read_line, 0);
  const Diagnostic& d = diags.all().front();
  std::string lower = d.message;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return std::tolower(ch); });
  EXPECT_NE(lower.find("race"), std::string::npos) << diags.render(file, source);
  EXPECT_NE(d.message.find("smem_c"), std::string::npos) << diags.render(file, source);
  EXPECT_EQ(d.loc.line, read_line) << diags.render(file, source);
  // The same kernel with the Synchronize() in place runs clean (checked above); here nothing else is wrong.
  EXPECT_EQ(diags.error_count(), 1) << diags.render(file, source);
}

}  // namespace
}  // namespace tilevm::example_test
