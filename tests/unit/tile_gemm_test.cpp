// The tile layer's GEMM (examples/tile/gemm_f16.tile) on the interpreter: the lowered program computes the
// product at every pipeline depth, including none (where insert_barriers alone keeps it race-free), on
// partial tiles in every direction and a K that no tile divides; and what each pass leaves is the program
// the next one expects.
#include <gtest/gtest.h>

#include <cmath>

#include "example_util.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/ops/gemm/gemm_data.h"

namespace tilevm::tile {
namespace {

using example_test::load_example;

struct Count : ir::IRVisitor {
  std::map<std::string, int> by_name;
  void visit_inst(const ir::Inst& inst) override { ++by_name[inst->name()]; }
};

std::map<std::string, int> count_instructions(const ir::Program& p) {
  Count c;
  c.visit_program(p);
  return c.by_name;
}

void expect_product(const std::map<std::string, std::string>& defines, int64_t m, int64_t n, int64_t k) {
  std::optional<ir::Program> p = load_example("tile/gemm_f16.tile", defines);
  ASSERT_TRUE(p);
  ops::GemmData data = ops::random_gemm_data(m, n, k, static_cast<uint32_t>(m * 7 + n * 3 + k));
  interp::Arguments args = data.args();
  Diagnostics diags;
  ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render("gemm_f16.tile", "");
  // Each K step's Dot sums exactly and rounds once into the f32 accumulator, which rounds once more to f16:
  // within one f16 unit in the last place (2^-24 where the result is subnormal).
  EXPECT_EQ(ops::gemm_mismatch(data, data.c, std::ldexp(1.0, -10), std::ldexp(1.0, -24)), "");
}

TEST(TileGemm, PipelinedProductOnTheInterpreter) {
  expect_product({{"BM", "64"}, {"BN", "64"}}, 150, 136, 200);
}

TEST(TileGemm, EveryPipelineDepth) {
  for (const char* stages : {"1", "2", "4"}) {
    SCOPED_TRACE(stages);
    expect_product({{"BM", "64"}, {"BN", "32"}, {"STAGES", stages}}, 70, 72, 100);
  }
}

TEST(TileGemm, DefaultTilesOnTheInterpreter) {
  expect_product({}, 128, 136, 96);
}

TEST(TileGemm, LoweredProgramHasNoTileOperators) {
  std::optional<ir::Program> p = load_example("tile/gemm_f16.tile");
  ASSERT_TRUE(p);
  std::map<std::string, int> n = count_instructions(*p);
  for (const char* op : {"AllocateFragment", "Copy", "Gemm", "Fill"}) EXPECT_EQ(n[op], 0) << op;
  EXPECT_EQ(n["Dot"], 1);
  EXPECT_EQ(n["CopyAsync"], 4);  // two tiles, in the prologue and the refill
  EXPECT_EQ(n["Synchronize"], 1);
}

TEST(TileGemm, UnpipelinedLoopGetsBarriersBothWays) {
  std::optional<ir::Program> p = load_example("tile/gemm_f16.tile", {{"STAGES", "1"}});
  ASSERT_TRUE(p);
  std::map<std::string, int> n = count_instructions(*p);
  EXPECT_EQ(n["CopyAsync"], 0);
  // One before the copies overwrite what the last iteration's Gemm read, one before the Gemm reads them.
  EXPECT_EQ(n["Synchronize"], 2);
}

}  // namespace
}  // namespace tilevm::tile
