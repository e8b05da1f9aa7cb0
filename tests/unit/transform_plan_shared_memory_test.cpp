// transform::plan_shared_memory (include/tilevm/transform/plan_shared_memory.h): the ranges are recorded in
// the AllocateShared instructions and the extent in the program, the emitter reads them, and it refuses a
// program that was not planned.
#include <gtest/gtest.h>

#include <vector>

#include "codegen_test_util.h"
#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/printer.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/support/error.h"
#include "tilevm/transform/infer_threads.h"
#include "tilevm/transform/plan_shared_memory.h"
#include "transform_test_util.h"

namespace tilevm::transform {
namespace {

using testing::parse;

constexpr const char* kSource = R"(la = spatial(32)

def shared<1>[threads=32](f32* x_ptr):
    g = ViewGlobal(x_ptr, dtype=f32, shape=[64])
    a = LoadGlobal(g, la)
    s = AllocateShared(f32, shape=[32])
    StoreShared(a, s)
    Synchronize()
    b = LoadShared(s, la)
    FreeShared(s)
    t = AllocateShared(f16, shape=[2, 32])
    u = AllocateShared(f32, shape=[8])
    for k in range(2):
        h = Cast(b, dtype=f16)
        StoreShared(h, t[k])
    Synchronize()
    c = LoadShared(t[1], la)
    StoreGlobal(c, g)
)";

// name: [offset, offset + bytes) for every AllocateShared, in program order.
std::vector<std::string> ranges(const ir::Program& p) {
  struct Collect : ir::IRVisitor {
    std::vector<std::string> out;
    void visit_inst_stmt(const ir::InstStmt& s) override {
      if (const auto* a = s.inst->as<ir::AllocateSharedInst>())
        out.push_back(s.results[0]->name + (a->placement
                                                ? fmt::format(": [{}, {})", a->placement->offset,
                                                              a->placement->offset + a->placement->bytes)
                                                : ": unplanned"));
    }
  } c;
  c.visit_program(p);
  return c.out;
}

TEST(TransformPlanSharedMemory, RecordsEveryRangeInTheProgram) {
  const ir::Program p = parse(kSource);
  EXPECT_EQ(ranges(p), (std::vector<std::string>{"s: unplanned", "t: unplanned", "u: unplanned"}));
  EXPECT_FALSE(p.shared_bytes);
  const ir::Program q = plan_shared_memory(p);
  // s is freed before t is allocated: t reuses its bytes; u is live with t and goes after it.
  EXPECT_EQ(ranges(q), (std::vector<std::string>{"s: [0, 128)", "t: [0, 128)", "u: [128, 160)"}));
  EXPECT_EQ(q.shared_bytes, 160);
  const std::string text = ir::print_program(q);
  EXPECT_NE(text.find("    t = AllocateShared(f16, shape=[2, 32])  # shared [0, 128)\n"), std::string::npos);
  EXPECT_NE(text.find("](f32* x_ptr):  # shared memory: 160 bytes planned\n"), std::string::npos);
  // Statements other than the allocations are shared with the input.
  EXPECT_EQ(q.body[0], p.body[0]);
  EXPECT_NE(q.body[2], p.body[2]);
  // Planning a planned program changes nothing.
  const ir::Program again = plan_shared_memory(q);
  EXPECT_TRUE(ir::same_nodes(again.body, q.body));
}

// (Moved from codegen_emit_test.cpp, where the plan was the emitter's.)
TEST(TransformPlanSharedMemory, ReusesFreedSpaceAndKeepsAsyncDestinations) {
  const auto p = codegen_test::load_program(codegen_test::source_root() / "tests" / "golden" / "emit" /
                                            "shared_dot_atomic.tile");
  ASSERT_TRUE(p);
  // sa is freed before sb is allocated: sb reuses offset 0.
  const std::vector<std::string> planned = ranges(*p);
  ASSERT_EQ(planned.size(), 2u);
  EXPECT_TRUE(planned[0].starts_with("sa: [0, ")) << planned[0];
  EXPECT_TRUE(planned[1].starts_with("sb: [0, ")) << planned[1];
  const auto pipelined =
      codegen_test::load_program(codegen_test::source_root() / "examples" / "matmul_f16_u6_pipelined.tile");
  ASSERT_TRUE(pipelined);
  // smem_a (swizzled, 128-aligned), smem_b and smem_c: the CopyAsync destinations are never waited with n=0,
  // so smem_c gets its own space.
  EXPECT_EQ(pipelined->shared_bytes, 24576 + 18432 + 2048);
}

TEST(TransformPlanSharedMemory, TheEmitterReadsThePlan) {
  const ir::Program planned = plan_shared_memory(parse(kSource));
  const std::string cuda =
      codegen::cuda::emit_cuda(planned, {.target = target::Target::for_arch("sm_90")}).source;
  EXPECT_NE(cuda.find("// shared bytes [128, 160)"), std::string::npos);
  EXPECT_NE(cuda.find("(160 planned, "), std::string::npos);
  // t reuses s's bytes, so its readers must finish first; u reuses nothing.
  EXPECT_NE(cuda.find("this tensor reuses the shared bytes of a dead one"), std::string::npos);
}

TEST(TransformPlanSharedMemory, TheEmitterRefusesAnUnplannedProgram) {
  const ir::Program unplanned = infer_threads(parse(kSource));
  try {
    codegen::cuda::emit_cuda(unplanned, {.target = target::Target::for_arch("sm_90")});
    ADD_FAILURE() << "emitted an unplanned program";
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "program 'shared' is not lowered: its shared memory has not been set (run transform::lower first)");
  }
}

}  // namespace
}  // namespace tilevm::transform
