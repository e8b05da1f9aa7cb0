// tune::compile_parallel (include/tilevm/tune/parallel_compile.h): jobs of any kind on a thread pool,
// ir::Programs and qmatmul configurations compiled through NVRTC (no GPU needed), failures collected per job.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>

#include "tilevm/ops/qmatmul/qmatmul_template.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"
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
  EXPECT_TRUE(compile_parallel({}, target::Target::generic_sm80(), {.progress = false}).empty());
  EXPECT_TRUE(compile_parallel(std::vector<std::function<int()>>{}, {.progress = false}).empty());
}

// Any build thunk: results in order, every kind of exception a failure of its own job.
TEST(TuneParallelCompile, RunsThunksInOrderAndCollectsFailures) {
  std::vector<std::function<int()>> jobs;
  for (int i = 0; i < 40; ++i) {
    jobs.push_back([i]() -> int {
      if (i == 7) fail("job {} is invalid", i);
      if (i == 9) throw std::runtime_error("");
      return i * i;
    });
  }
  const std::vector<Compiled<int>> out = compile_parallel(jobs, {.threads = 3, .progress = false});
  ASSERT_EQ(out.size(), jobs.size());
  for (int i = 0; i < 40; ++i) {
    if (i == 7 || i == 9) continue;
    ASSERT_TRUE(out[i].ok()) << i;
    EXPECT_EQ(*out[i].value, i * i);
    EXPECT_GE(out[i].seconds, 0);
  }
  EXPECT_FALSE(out[7].ok());
  EXPECT_EQ(out[7].error, "job 7 is invalid");
  EXPECT_FALSE(out[9].ok());
  EXPECT_EQ(out[9].error, "compile failed");  // an exception without a message still names a failure
}

TEST(TuneParallelCompile, CompilesPrograms) {
  if (!runtime::nvrtc_available()) GTEST_SKIP() << "NVRTC is not available";
  const ops::QMatmulProblem p = small_problem();
  const std::vector<ir::Program> programs =
      ops::QMatmulTemplate().build(p, ops::QMatmulConfig::parse("bm16_bn64_bk64_sk64_w1x4_s3_k2"));
  ASSERT_EQ(programs.size(), 2u);  // transform, matmul (split-K sums in the same launch)
  const auto out =
      compile_parallel(programs, target::Target::generic_sm80(), {.threads = 2, .progress = false});
  ASSERT_EQ(out.size(), 2u);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_TRUE(out[i].ok()) << out[i].error;
    EXPECT_EQ(out[i].value->program.name, programs[i].name);
    EXPECT_FALSE(out[i].value->cubin->cubin.empty());
  }
}

TEST(TuneParallelCompile, CompilesConfigurationsAndCollectsFailures) {
  if (!runtime::nvrtc_available()) GTEST_SKIP() << "NVRTC is not available";
  const ops::QMatmulProblem p = small_problem();
  const ops::QMatmulTemplate qmatmul;
  std::vector<ops::QMatmulConfig> configs;
  std::vector<std::function<ops::CompiledQMatmul()>> builds;
  for (const char* name : {"bm16_bn32_bk64_sk64_w1x2_s2_k1", "bm16_bn64_bk64_sk64_w1x4_s3_k2",
                           "bm16_bn40_bk64_sk64_w1x4_s2_k1" /* block_n not a multiple of 8 * warps_n */}) {
    configs.push_back(ops::QMatmulConfig::parse(name));
    builds.push_back(
        [&qmatmul, &p, c = configs.back()] { return qmatmul.compile(p, c, target::Target::generic_sm80()); });
  }
  const std::vector<Compiled<ops::CompiledQMatmul>> out =
      compile_parallel(builds, {.threads = 2, .progress = false});
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(configs[i].name());
    ASSERT_TRUE(out[i].ok()) << out[i].error;
    EXPECT_EQ(out[i].value->config, configs[i]);  // in the order of the builds
    EXPECT_FALSE(out[i].value->matmul.cubin->cubin.empty());
    EXPECT_GE(out[i].seconds, 0);
  }
  // split_k 2 takes tickets in the same launch: its matmul has the counters' parameter.
  auto has_param = [](const ops::CompiledQMatmul& c, const char* name) {
    for (const auto& param : c.matmul.kernel.params)
      if (param.name == name) return true;
    return false;
  };
  EXPECT_FALSE(has_param(*out[0].value, "count_ptr"));
  EXPECT_TRUE(has_param(*out[1].value, "count_ptr"));
  EXPECT_FALSE(out[2].ok());
  EXPECT_NE(out[2].error.find("block_n"), std::string::npos) << out[2].error;
}

}  // namespace
}  // namespace tilevm::tune
