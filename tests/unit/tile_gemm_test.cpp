// The tile layer's GEMM (examples/tile/gemm_f16.tile) on the interpreter: the lowered program computes the
// product at every pipeline depth, including none (where insert_barriers alone keeps it race-free), on
// partial tiles in every direction and a K that no tile divides; and what each pass leaves is the program
// the next one expects.
#include <gtest/gtest.h>

#include <cmath>

#include "example_util.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/layout/tiled_storage.h"
#include "tilevm/ops/gemm/gemm_data.h"
#include "tilevm/type/packing.h"

namespace tilevm::tile {
namespace {

struct Count : ir::IRVisitor {
  std::map<std::string, int> by_name;
  void visit_inst(const ir::Inst& inst) override { ++by_name[inst->name()]; }
};

std::map<std::string, int> count_instructions(const ir::Program& p) {
  Count c;
  c.visit_program(p);
  return c.by_name;
}

// examples/tile/gemm_f16.tile lowered for `target` (B's view given `b_layout`, e.g. ", layout=auto").
std::optional<ir::Program> lowered(const std::map<std::string, std::string>& defines,
                                   const target::Target& target, const std::string& b_layout = "") {
  std::string source = example_test::read_text(example_test::example_path("tile/gemm_f16.tile"));
  const std::string view = "b = ViewGlobal(b_ptr, dtype=f16, shape=[N, K]";
  source.replace(source.find(view), view.size(), view + b_layout);
  Diagnostics diags;
  ir::ParseOptions options;
  options.defines = defines;
  std::optional<ir::Program> p = ir::parse_program(source, diags, options);
  if (p) p = transform::lower(*std::move(p), diags, {.target = target, .verify_each_pass = true});
  if (!p) ADD_FAILURE() << diags.render("gemm_f16.tile", source);
  return p;
}

void expect_product(const std::map<std::string, std::string>& defines, int64_t m, int64_t n, int64_t k,
                    const target::Target& target = target::Target::generic_sm80()) {
  std::optional<ir::Program> p = lowered(defines, target);
  ASSERT_TRUE(p);
  ops::GemmData data = ops::random_gemm_data(m, n, k, static_cast<uint32_t>(m * 7 + n * 3 + k));
  interp::Arguments args = data.args();
  Diagnostics diags;
  ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render("gemm_f16.tile", "");
  // Each K step's Dot sums exactly and rounds once into the f32 accumulator, which rounds once more to f16:
  // within one f16 unit in the last place (2^-24 where the result is subnormal).
  EXPECT_EQ(ops::gemm_mismatch(data, data.c, std::ldexp(1.0, -10), std::ldexp(1.0, -24)), "");
}

const std::map<std::string, std::string> kSmall = {{"BM", "64"}, {"BN", "64"}, {"BK", "32"}, {"STAGES", "3"}};

TEST(TileGemm, PipelinedProductOnTheInterpreter) {
  expect_product(kSmall, 150, 136, 200);
}

TEST(TileGemm, EveryPipelineDepth) {
  for (const char* stages : {"1", "2", "4"}) {
    SCOPED_TRACE(stages);
    expect_product({{"BM", "64"}, {"BN", "32"}, {"BK", "32"}, {"STAGES", stages}}, 70, 72, 100);
  }
}

TEST(TileGemm, DefaultTilesOnTheInterpreter) {
  expect_product({}, 136, 264, 136);
}

// On sm_90a the same program lowers to one asynchronous wgmma per step (64-row blocks per warpgroup); the
// interpreter runs that form too, and with the pipeline off it is one synchronous Dot on the shared tiles.
TEST(TileGemm, WgmmaFormOnTheInterpreter) {
  const target::Target h100 = target::Target::h100_sxm();
  std::optional<ir::Program> p = lowered({}, h100);
  ASSERT_TRUE(p);
  std::map<std::string, int> n = count_instructions(*p);
  EXPECT_EQ(n["DotAsync"], 1);  // pipelined: one step deep
  EXPECT_EQ(n["DotAsyncWait"], 2);
  EXPECT_EQ(n["LoadShared"], 0);  // the tensor cores read the shared tiles themselves
  expect_product({}, 136, 264, 136, h100);
  expect_product({{"BM", "64"}, {"BN", "64"}, {"BK", "32"}, {"STAGES", "2"}}, 100, 72, 80, h100);
  std::optional<ir::Program> plain = lowered({{"STAGES", "1"}}, h100);
  ASSERT_TRUE(plain);
  n = count_instructions(*plain);
  EXPECT_EQ(n["DotAsync"], 0);
  EXPECT_EQ(n["Dot"], 1);
  expect_product({{"STAGES", "1"}}, 136, 264, 136, h100);
}

// WS=True on sm_90a: a producer warpgroup with the TMA and the two warpgroups of the kernel consuming
// (regions, interleaved by the interpreter under several schedules and race-checked); elsewhere the same
// program as without it.
TEST(TileGemm, WarpSpecializedOnTheInterpreter) {
  const target::Target h100 = target::Target::h100_sxm();
  std::optional<ir::Program> p = lowered({{"WS", "True"}}, h100);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->threads, 384);
  std::map<std::string, int> n = count_instructions(*p);
  EXPECT_EQ(n["CopyTma"], 2);  // the producer's, once per step
  EXPECT_EQ(n["BarrierWait"], 2);
  EXPECT_EQ(n["BarrierArrive"], 2);
  EXPECT_EQ(n["DotAsync"], 1);
  EXPECT_EQ(n["Synchronize"], 0);
  expect_product({{"WS", "True"}}, 136, 264, 200, h100);
  expect_product({{"WS", "True"}, {"BM", "64"}, {"BN", "64"}, {"BK", "32"}, {"STAGES", "3"}}, 100, 72, 264,
                 h100);
  std::optional<ir::Program> sm80 = lowered({{"WS", "True"}}, target::Target::generic_sm80());
  ASSERT_TRUE(sm80);
  EXPECT_EQ(sm80->threads, 256);
  EXPECT_EQ(count_instructions(*sm80)["CopyTma"], 0);
}

// layout=auto on B's view, whose tiles only the Gemm reads: B is stored tile after tile in the layout the
// Gemm gave its shared operand (the swizzled rows), so each copy moves a tile's bytes as they lie (on
// sm_90a one bulk copy, without a tensor map). The host packs B in the layout the kernel names; the product
// is the same, on a ragged shape, for mma.sync, wgmma and the warp-specialized form.
TEST(TileGemm, AutoLayoutOfTheWeightsIsTheGemmOperandsLayout) {
  const struct {
    target::Target target;
    std::map<std::string, std::string> defines;
  } cases[] = {{target::Target::generic_sm80(), kSmall},
               {target::Target::h100_sxm(), kSmall},
               {target::Target::h100_sxm(), {{"WS", "True"}}}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.target.name + (c.defines.count("WS") ? " WS" : ""));
    std::optional<ir::Program> p = lowered(c.defines, c.target, ", layout=auto");
    ASSERT_TRUE(p);
    const auto layouts = ir::pointer_layouts(*p);
    ASSERT_EQ(layouts.size(), 1u);
    ASSERT_EQ(layouts[0].first, "b_ptr");
    // Rows of BK f16 in 16-byte chunks, swizzled (two rows of 4 chunks share a 128-byte line when BK = 32).
    EXPECT_EQ(layout::print_layout(layouts[0].second),
              c.defines.count("BK") ? "swizzle(local(64, 4), dim=1, log_step=1).local(1, 8)"
                                    : "swizzle(local(256, 8), dim=1).local(1, 8)");
    ops::GemmData data = ops::random_gemm_data(100, 136, 200, 11);
    const layout::TiledStorage storage(layouts[0].second, {data.n, data.k});
    std::vector<uint64_t> codes(static_cast<size_t>(data.n * data.k));
    for (size_t e = 0; e < codes.size(); ++e) codes[e] = get_code(data.b.data(), 16, static_cast<int64_t>(e));
    std::vector<uint8_t> packed = storage.pack(16, codes);
    interp::Arguments args = data.args();
    args.buffers["b_ptr"] = &packed;
    Diagnostics diags;
    ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render("gemm_f16.tile", "");
    EXPECT_EQ(ops::gemm_mismatch(data, data.c, std::ldexp(1.0, -10), std::ldexp(1.0, -24)), "");
  }
}

TEST(TileGemm, LoweredProgramHasNoTileOperators) {
  std::optional<ir::Program> p = lowered({}, target::Target::generic_sm80());
  ASSERT_TRUE(p);
  std::map<std::string, int> n = count_instructions(*p);
  for (const char* op : {"AllocateFragment", "Copy", "Gemm", "Fill"}) EXPECT_EQ(n[op], 0) << op;
  EXPECT_EQ(n["Dot"], 1);
  EXPECT_EQ(n["LoadShared"], 2);
  EXPECT_EQ(n["CopyAsync"], 4);  // two tiles, in the prologue and the refill
  EXPECT_EQ(n["Synchronize"], 1);
}

TEST(TileGemm, UnpipelinedLoopGetsBarriersBothWays) {
  std::optional<ir::Program> p = lowered({{"STAGES", "1"}}, target::Target::generic_sm80());
  ASSERT_TRUE(p);
  std::map<std::string, int> n = count_instructions(*p);
  EXPECT_EQ(n["CopyAsync"], 0);
  // One before the copies overwrite what the last iteration's Gemm read, one before the Gemm reads them.
  EXPECT_EQ(n["Synchronize"], 2);
}

// On the GPU, both lowerings: the example's tiles (wgmma on an sm_90a device) and tiles no warpgroup split
// fits (BM = 64 over two warpgroups: ldmatrix + mma.sync), and the warp-specialized pipeline (WS=True),
// against the double product on fresh inputs whose output starts as NaN. run_on_gpu lowers the parsed
// program for the device.
TEST(TileGemmGpu, ProductOnTheDevice) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  const std::string source = example_test::read_text(example_test::example_path("tile/gemm_f16.tile"));
  for (const auto& defines : {std::map<std::string, std::string>{}, kSmall,
                              std::map<std::string, std::string>{{"BM", "64"}, {"BN", "128"}},
                              std::map<std::string, std::string>{{"WS", "True"}}}) {
    SCOPED_TRACE(defines.empty() ? "defaults" : defines.begin()->first + "=" + defines.begin()->second);
    Diagnostics diags;
    ir::ParseOptions options;
    options.defines = defines;
    std::optional<ir::Program> p = ir::parse_program(source, diags, options);
    ASSERT_TRUE(p) << diags.render("gemm_f16.tile", source);
    const int64_t m = 333, n = 520, k = 264;
    ops::GemmData data = ops::random_gemm_data(m, n, k, 99);
    interp::Arguments args = data.args();
    ASSERT_TRUE(exec::run_on_gpu(*p, args, diags)) << diags.render("gemm_f16.tile", source);
    // f32 sums in the tensor cores' order, then one rounding to f16.
    EXPECT_EQ(ops::gemm_mismatch(data, data.c, std::ldexp(1.0, -10), 1e-5 * k), "");
  }
}

}  // namespace
}  // namespace tilevm::tile
