// The superoptimizer's answer cache (include/tilevm/superopt/answer_cache.h): a stored answer comes back for
// the same program, options and device, and misses for any other.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "superopt_test_util.h"
#include "tilevm/superopt/answer_cache.h"

namespace tilevm::superopt {
namespace {

namespace fs = std::filesystem;

TEST(SuperoptAnswerCache, RoundTripAndMisses) {
  const fs::path dir = fs::temp_directory_path() / ("tilevm-answer-cache-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  tune::TuningCache cache(dir / "tuning.json");
  cache.set_quiet(true);
  const Graph program = testing::softmax_program();
  const Graph answer = parse_graph(testing::read_test_file("rmsnorm_linear_fused.graph"));  // any graph
  const AnswerKey key{.device = "NVIDIA H100 80GB HBM3", .arch = "sm_90a", .options = "max_ops=5"};
  EXPECT_FALSE(lookup_answer(cache, program, key));
  ASSERT_TRUE(store_answer(cache, program, key, answer, 12.5));
  const std::optional<Graph> back = lookup_answer(cache, program, key);
  ASSERT_TRUE(back);
  EXPECT_EQ(print_graph(*back), print_graph(answer));
  // Another device, other options, another program: misses.
  EXPECT_FALSE(
      lookup_answer(cache, program, {.device = "NVIDIA H200", .arch = "sm_90a", .options = "max_ops=5"}));
  EXPECT_FALSE(
      lookup_answer(cache, program, {.device = key.device, .arch = "sm_90a", .options = "max_ops=6"}));
  const Graph other = parse_graph(
      "kernel softmax {\n  input X [4, 16]\n  E = exp(X)\n  Z = sum(E) dim=1\n  Y = div(E, Z)\n  output "
      "Y\n}\n");
  EXPECT_FALSE(lookup_answer(cache, other, key));
  EXPECT_NE(answer_key(program, key).problem, answer_key(other, key).problem);
  // An entry that is not a graph is ignored.
  cache.store(answer_key(other, key), {.config = "kernel broken {", .median_us = 0});
  EXPECT_FALSE(lookup_answer(cache, other, key));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tilevm::superopt
