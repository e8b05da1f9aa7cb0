// The GEMM template (ops/gemm/gemm.h): every tile shape of its space verifies, lowers and emits for the
// H100; configuration names round-trip; the cost model prefers more, smaller tiles on a small problem; and
// a small configuration computes the product on the interpreter (the GPU check is the tuner's own,
// GemmTemplate::check, run by `tilevm bench --workloads gemm`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ops/gemm/gemm.h"
#include "tilevm/support/error.h"
#include "tilevm/transform/lower.h"
#include "tilevm/type/convert.h"

namespace tilevm::ops {
namespace {

TEST(OpsGemm, EveryConfigurationOfTheSpaceEmits) {
  const target::Target h100 = target::Target::h100_sxm();
  const GemmTemplate kernel;
  const std::vector<GemmConfig> space = kernel.space({4096, 4096, 4096}, h100);
  ASSERT_GE(space.size(), 30u);
  // Each tile shape once, at its deepest pipeline (the most shared memory): the stages change nothing else.
  for (const GemmConfig& c : space) {
    const bool deepest = std::none_of(space.begin(), space.end(), [&](const GemmConfig& d) {
      return d.bm == c.bm && d.bn == c.bn && d.stages > c.stages;
    });
    if (!deepest) continue;
    SCOPED_TRACE(c.name());
    Diagnostics diags;
    std::optional<ir::Program> p = transform::lower(build_gemm(c), diags, {.target = h100});
    ASSERT_TRUE(p && !diags.has_errors()) << diags.render("gemm", "");
    const codegen::cuda::EmittedKernel k = codegen::cuda::emit_cuda(*p, {.target = h100});
    EXPECT_NE(k.source.find("wgmma.mma_async"), std::string::npos);
    EXPECT_LE(k.dynamic_shared_bytes, h100.shared_per_block);
  }
  EXPECT_TRUE(kernel.space({4096, 4096, 4096}, target::Target::generic_sm80()).empty());
}

TEST(OpsGemm, ConfigurationNames) {
  const GemmConfig c{64, 192, 5, 8};
  EXPECT_EQ(c.name(), "bm64_bn192_s5_g8");
  EXPECT_EQ(GemmConfig::parse(c.name()), c);
  EXPECT_THROW(GemmConfig::parse("bm96_bn256_s4_g8"), Error);
  EXPECT_THROW(GemmConfig::parse("bm128_bn256_s4"), Error);
  EXPECT_THROW(GemmConfig::parse("bm128_bn256_s4_g8x"), Error);
}

TEST(OpsGemm, CostModelTakesSmallTilesForSmallProblems) {
  const target::Target h100 = target::Target::h100_sxm();
  const GemmTemplate kernel;
  auto best = [&](const GemmProblem& p) {
    return tune::prune(kernel, p, kernel.space(p, h100), h100, 1).at(0);
  };
  const GemmConfig small = best({1024, 1024, 1024}), large = best({8192, 8192, 8192});
  EXPECT_LT(small.bm * small.bn, large.bm * large.bn) << small.name() << " vs " << large.name();
}

TEST(OpsGemm, SmallConfigurationOnTheInterpreter) {
  const GemmConfig c{64, 64, 2, 2};
  Diagnostics diags;
  std::optional<ir::Program> p = transform::lower(build_gemm(c), diags, {});
  ASSERT_TRUE(p) << diags.render("gemm", "");
  const int m = 150, n = 136, k = 200;  // partial tiles in every direction, K past the two stages
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  auto random = [&](size_t count) {
    std::vector<uint8_t> out(2 * count);
    for (size_t i = 0; i < count; ++i) {
      const auto code = static_cast<uint16_t>(encode(DataType::f16(), real(rng)));
      std::memcpy(&out[2 * i], &code, 2);
    }
    return out;
  };
  std::vector<uint8_t> a = random(static_cast<size_t>(m) * k), b = random(static_cast<size_t>(n) * k);
  std::vector<uint8_t> out(static_cast<size_t>(m) * n * 2, 0xFF);
  const std::vector<uint8_t> a0 = a, b0 = b;
  interp::Arguments args;
  args.scalars["M"] = interp::ScalarValue{false, m, 0.0};
  args.scalars["N"] = interp::ScalarValue{false, n, 0.0};
  args.scalars["K"] = interp::ScalarValue{false, k, 0.0};
  args.buffers["a_ptr"] = &a;
  args.buffers["b_ptr"] = &b;
  args.buffers["c_ptr"] = &out;
  ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render("gemm", gemm_program_text());
  auto at = [](const std::vector<uint8_t>& v, size_t i) {
    uint16_t x;
    std::memcpy(&x, &v[2 * i], 2);
    return decode(DataType::f16(), x);
  };
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0;
      for (int x = 0; x < k; ++x)
        ref += at(a0, static_cast<size_t>(i) * k + x) * at(b0, static_cast<size_t>(j) * k + x);
      // The interpreter sums exactly and rounds once to f16.
      ASSERT_LE(std::abs(at(out, static_cast<size_t>(i) * n + j) - ref),
                std::abs(ref) * std::ldexp(1.0, -11) + 1e-12)
          << i << ", " << j;
    }
}

}  // namespace
}  // namespace tilevm::ops
