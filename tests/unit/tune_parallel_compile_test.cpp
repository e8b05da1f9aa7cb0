// tune::compile_parallel (include/tilevm/tune/parallel_compile.h): several configurations compiled on a
// thread pool through NVRTC (no GPU needed), failures collected per configuration.
#include <gtest/gtest.h>

#include "tilevm/runtime/nvrtc.h"
#include "tilevm/tune/parallel_compile.h"

namespace tilevm::tune {
namespace {

ops::QMatmulProblem small_problem() {
  ops::QMatmulProblem p;
  p.m = 3;
  p.n = 40;
  p.k = 128;
  p.wtype = DataType::uint(4);
  p.group = 64;
  return p;
}

TEST(TuneParallelCompile, ProgressLine) {
  EXPECT_EQ(progress_line(0, 120, 0.04, 10), "compiling 0/120 [          ] 0.0 s");
  EXPECT_EQ(progress_line(37, 120, 12.34, 10), "compiling 37/120 [==>       ] 12.3 s");
  EXPECT_EQ(progress_line(120, 120, 25.06, 10), "compiling 120/120 [==========] 25.1 s");
}

TEST(TuneParallelCompile, EmptyRequestList) {
  EXPECT_TRUE(compile_parallel({}, "sm_80", {.progress = false}).empty());
}

TEST(TuneParallelCompile, CompilesConfigurationsAndCollectsFailures) {
  if (!runtime::nvrtc_available()) GTEST_SKIP() << "NVRTC is not available";
  const ops::QMatmulProblem p = small_problem();
  std::vector<CompileRequest> requests;
  for (const char* name : {"bm16_bn32_bk64_sk64_w1x2_s2_k1", "bm16_bn64_bk64_sk64_w1x4_s3_k2",
                           "bm16_bn40_bk64_sk64_w1x4_s2_k1" /* block_n not a multiple of 8 * warps_n */}) {
    requests.push_back({p, ops::QMatmulConfig::parse(name)});
  }
  const std::vector<CompileOutcome> out = compile_parallel(requests, "sm_80", {.threads = 2, .progress = false});
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(requests[i].config.name());
    ASSERT_TRUE(out[i].ok()) << out[i].error;
    EXPECT_EQ(out[i].request.config, requests[i].config);  // in the order of the requests
    EXPECT_EQ(out[i].compiled->config, requests[i].config);
    EXPECT_FALSE(out[i].compiled->matmul.cubin->cubin.empty());
    EXPECT_GE(out[i].seconds, 0);
  }
  EXPECT_FALSE(out[0].compiled->reduce);
  EXPECT_TRUE(out[1].compiled->reduce);  // split_k 2
  EXPECT_FALSE(out[2].ok());
  EXPECT_NE(out[2].error.find("block_n"), std::string::npos) << out[2].error;
}

}  // namespace
}  // namespace tilevm::tune
