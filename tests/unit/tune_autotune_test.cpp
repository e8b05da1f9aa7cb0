// ops::heuristic_qmatmul_config and ops::autotune_qmatmul (include/tilevm/ops/qmatmul/qmatmul_template.h),
// the tuner of tune/autotune.h over the quantized matmul. The heuristic runs everywhere; autotuning needs a
// GPU and is skipped without one.
#include <gtest/gtest.h>

#include "scoped_env.h"

#include <unistd.h>
#include "qmatmul_test_util.h"

#include <cstdlib>
#include <filesystem>
#include <tuple>

#include <fmt/format.h>

#include "tilevm/ops/qmatmul/config_space.h"
#include "tilevm/ops/qmatmul/gpu_check.h"
#include "tilevm/ops/qmatmul/qmatmul_template.h"
#include "tilevm/runtime/device.h"
#include "tilevm/tune/autotune.h"
#include "tilevm/tune/tuning_cache.h"

namespace tilevm::ops {
namespace {

ops::QMatmulProblem problem(int64_t m, int64_t n, int64_t k, int64_t group = 128) {
  return ops::make_problem(m, n, k, DataType::uint(4), group);
}

TEST(TuneHeuristic, ValidForEveryShapeAndDeterministic) {
  for (const ops::QMatmulProblem& p :
       {problem(1, 8192, 8192), problem(16, 57344, 8192), problem(16, 8192, 28672), problem(4096, 8192, 8192),
        problem(3, 20, 64, 32), problem(17, 40, 128, 64), problem(64, 10240, 8192)}) {
    SCOPED_TRACE(p.key());
    const ops::QMatmulConfig c = heuristic_qmatmul_config(p);
    EXPECT_NO_THROW(ops::check_config(p, c)) << c.name();
    EXPECT_EQ(heuristic_qmatmul_config(p), c);
  }
}

TEST(TuneHeuristic, PicksWhatTheShapeNeeds) {
  // Decode on a narrow layer: too few column blocks for 132 SMs without split-K.
  EXPECT_GT(heuristic_qmatmul_config(problem(1, 4096, 8192)).split_k, 1);
  // Prefill: dequantize, then cuBLAS's GEMM (faster than mma.sync); without it, tall blocks and no split.
  EXPECT_TRUE(heuristic_qmatmul_config(problem(4096, 8192, 8192)).dequant_gemm);
  const ops::QMatmulConfig prefill =
      heuristic_qmatmul_config(problem(4096, 8192, 8192), qmatmul_default_target(), false);
  EXPECT_FALSE(prefill.dequant_gemm);
  EXPECT_GE(prefill.block_m, 64);
  EXPECT_EQ(prefill.split_k, 1);
  // Decode never dequantizes the whole weight first.
  EXPECT_FALSE(heuristic_qmatmul_config(problem(16, 8192, 8192)).dequant_gemm);
  // Decode at M <= 8 picks the mma's operands swapped (the cost model's 0.9 term; on the H100 the swapped
  // form won every M = 1 decode shape). Whether a tiny problem is swapped is the cost model's close call, so
  // it is not pinned here (the space holds only 8- and 16-row tiles there anyway).
  for (int64_t m : {1, 8}) {
    EXPECT_TRUE(heuristic_qmatmul_config(problem(m, 8192, 8192)).swapped()) << m;
    EXPECT_TRUE(heuristic_qmatmul_config(problem(m, 57344, 8192)).swapped()) << m;
  }
}

TEST(TuneAutotuneGpu, TunesCachesAndReadsBack) {
  if (!runtime::Device::available()) GTEST_SKIP() << "no CUDA device";
  const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     fmt::format("tilevm-autotune-test-{}.json", static_cast<long>(getpid()));
  std::filesystem::remove(file);
  const test::ScopedEnv env("TILEVM_TUNE_CACHE", file.c_str());
  const runtime::Device device = runtime::Device::open();
  const ops::QMatmulProblem p = problem(16, 4096, 4096);
  tune::TuneOptions options;
  options.keep_after_model = 6;
  options.progress = false;
  const QMatmulTuneResult r = autotune_qmatmul(device, p, options);
  EXPECT_FALSE(r.from_cache);
  EXPECT_EQ(r.compiled, 6);
  EXPECT_EQ(r.timed, 6);
  EXPECT_GT(r.median_us, 0);
  EXPECT_NO_THROW(ops::check_config(p, r.config));
  // The tuned configuration computes correctly (the tuner checked it; so does this test, on its own).
  std::string why;
  EXPECT_TRUE(check_qmatmul_on_gpu(device, p, r.config, &why)) << why;
  const QMatmulTuneResult again = autotune_qmatmul(device, p, options);
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.config, r.config);
  EXPECT_DOUBLE_EQ(again.median_us, r.median_us);
  std::filesystem::remove(file);
}

// The small problem a tuned configuration is checked on keeps what the programs depend on: the types, zero
// points and whether scales are per group or per channel (and the group size).
TEST(TuneVerify, TheVerificationProblemKeepsTheProgramsStructure) {
  ops::QMatmulProblem p = problem(16, 57344, 8192, 128);
  p.wtype = DataType::uint(3);
  p.zero_point = true;
  p.atype = DataType::bf16();
  const ops::QMatmulProblem v = gpu_check_problem(p);
  EXPECT_EQ(v.m, 16);
  EXPECT_EQ(v.n, 296);  // a multiple of 8 as n is (the warp-specialized form's TMA rows need it)
  EXPECT_EQ(v.k, 512);
  EXPECT_EQ(v.group, 128);
  EXPECT_EQ(v.wtype, p.wtype);
  EXPECT_EQ(v.atype, p.atype);
  EXPECT_TRUE(v.zero_point);
  EXPECT_NO_THROW(ops::check_problem(v));
  const ops::QMatmulProblem per_channel = gpu_check_problem(problem(1, 64, 8192, 8192));
  EXPECT_EQ(per_channel.k, 512);
  EXPECT_EQ(per_channel.group, 512);  // still one group per column
  const ops::QMatmulProblem small = gpu_check_problem(problem(1, 20, 96, 32));
  EXPECT_EQ(small.k, 96);
  EXPECT_EQ(small.n, 20);
  p.n = 57338;
  EXPECT_EQ(gpu_check_problem(p).n, 300);
}

// The tuner checks its pick on the small problem, so every configuration of a problem's space must be valid
// there too (the warp-specialized form's pick failed the whole problem on the GPU when n became 300).
TEST(TuneVerify, EveryConfigurationOfTheSpaceFitsTheVerificationProblem) {
  const target::Target h100 = target::Target::h100_sxm();
  for (int64_t m : {1, 16, 64, 256, 384, 512, 4096})  // 384 and 512: the wave-balanced block heights
    for (auto [n, k, g] : {std::tuple<int64_t, int64_t, int64_t>{8192, 8192, 128},
                           {57344, 8192, 128},
                           {8192, 28672, 64},
                           {10240, 8192, 8192},
                           {4104, 4096, 32}}) {
      const ops::QMatmulProblem p = problem(m, n, k, g);
      const ops::QMatmulProblem v = gpu_check_problem(p);
      for (const ops::QMatmulConfig& c : ops::qmatmul_config_space(p, {.target = &h100})) {
        SCOPED_TRACE(p.key() + " " + c.name());
        EXPECT_NO_THROW(ops::check_config(v, c, h100));
      }
    }
}

}  // namespace
}  // namespace tilevm::ops
