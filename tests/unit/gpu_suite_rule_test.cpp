// The rule that makes a GPU test run on the GPU machine: a test that skips where there is no GPU (its skip
// message starts with "no GPU", "no CUDA device" or "no cuBLAS") belongs to a test suite, or a fixture,
// whose name ends in Gpu. tests/CMakeLists.txt labels exactly those suites `gpu`, and bench/gpu.sh runs that
// label on the GPU machine, where none may skip; a GPU test named otherwise would skip in CI and never run.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "source_dir.h"

namespace tilevm {
namespace {

struct Block {
  std::string name;  // the test suite, or the fixture class
  bool skips_without_gpu = false;
};

// Splits a test file at each TEST*( and each fixture class, and notes which parts skip for lack of a GPU.
std::vector<Block> gpu_skipping_blocks(const std::string& text) {
  static const std::regex header(R"(\n(?:(?:TEST|TEST_F|TEST_P|TYPED_TEST)\((\w+),)"
                                 R"(|(?:class|struct) (\w+)\s*:\s*public\s+(?:::)?testing::))");
  static const std::regex gpu_skip(R"(GTEST_SKIP\(\)\s*<<\s*"no (GPU|CUDA device|cuBLAS))");
  std::vector<Block> blocks;
  std::vector<std::size_t> starts;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), header); it != std::sregex_iterator(); ++it) {
    blocks.push_back({(*it)[1].matched ? (*it)[1].str() : (*it)[2].str()});
    starts.push_back(static_cast<std::size_t>(it->position()));
  }
  starts.push_back(text.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::string body = text.substr(starts[i], starts[i + 1] - starts[i]);
    blocks[i].skips_without_gpu = std::regex_search(body, gpu_skip);
  }
  return blocks;
}

TEST(GpuSuiteRule, TheCheckFindsAMisnamedGpuTest) {
  const std::string text =
      "\nTEST(Fine, A) {\n  EXPECT_EQ(1, 1);\n}\n"
      "\nTEST(QMatmulGpu, B) {\n  if (!gpu()) GTEST_SKIP() << \"no CUDA device\";\n}\n"
      "\nTEST(Misnamed, C) {\n  if (!gpu()) GTEST_SKIP() << \"no GPU: \" << why;\n}\n"
      "\nclass RuntimeGpu : public ::testing::Test {\n  void SetUp() { GTEST_SKIP() << \"no GPU\"; }\n};\n"
      "\nTEST(Nvrtc, D) {\n  if (!nvrtc()) GTEST_SKIP() << \"no NVRTC\";\n}\n";
  std::vector<std::string> skipping;
  for (const Block& b : gpu_skipping_blocks(text))
    if (b.skips_without_gpu) skipping.push_back(b.name);
  EXPECT_EQ(skipping, (std::vector<std::string>{"QMatmulGpu", "Misnamed", "RuntimeGpu"}));
}

TEST(GpuSuiteRule, EveryTestThatSkipsWithoutAGpuIsInAGpuSuite) {
  const std::filesystem::path dir = testing::source_dir() / "tests" / "unit";
  int gpu_blocks = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    for (const Block& b : gpu_skipping_blocks(text.str())) {
      if (!b.skips_without_gpu) continue;
      ++gpu_blocks;
      EXPECT_TRUE(b.name.ends_with("Gpu")) << entry.path().filename().string() << ": " << b.name
                                           << " skips without a GPU, so its name must end in Gpu (label gpu)";
    }
  }
  // The GPU tests of today (runtime, converters, codegen, quantized matmul, cuBLAS, tuner, benchmarks): a
  // scan that finds none has stopped seeing them.
  EXPECT_GE(gpu_blocks, 10) << "in " << dir;
}

}  // namespace
}  // namespace tilevm
