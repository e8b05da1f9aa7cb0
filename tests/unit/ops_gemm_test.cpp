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
#include "tilevm/ops/gemm/gemm_data.h"
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
  // Partial tiles in every direction, K past the two stages.
  GemmData data = random_gemm_data(150, 136, 200, 7);
  interp::Arguments args = data.args();
  ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render("gemm", gemm_program_text());
  // The interpreter sums exactly and rounds once to f16.
  EXPECT_EQ(gemm_mismatch(data, data.c, std::ldexp(1.0, -11), 1e-12), "");
}

}  // namespace
}  // namespace tilevm::ops
