// The tile layer's warp_specialize=True (tile/warp_specialize.h) on kernels around the plain GEMM: where
// the split keeps what the kernel computes (loops that do not start at 0 or step by 1, a later TMA pipeline,
// a scalar assigned before any consumer reads it), the product on the interpreter; where it could not (a
// scalar the consumers would assign, or that the block would assign too early, an epilogue allocation
// rebinding a name, a break), a located error at the loop; and where the TMA form does not apply (a step
// that is not a constant), the plain pipeline, as tma=True does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/ops/gemm/gemm_data.h"
#include "tilevm/transform/lower.h"

namespace tilevm::tile {
namespace {

// C = A @ B^T in f16, 128 x 64 tiles over two warpgroups; `before` goes before the loop, `loop` is its
// header, `after` after it (each line indented by 4).
std::string kernel(const std::string& before, const std::string& loop, const std::string& after) {
  return "def g<ceil_div(M, 128), ceil_div(N, 64)>[threads=256](f16* a_ptr, f16* b_ptr, f16* c_ptr, i32 M, "
         "i32 N, i32 K):\n"
         "    bm, bn = BlockIndices()\n"
         "    a = ViewGlobal(a_ptr, dtype=f16, shape=[M, K])\n"
         "    b = ViewGlobal(b_ptr, dtype=f16, shape=[N, K])\n"
         "    c = ViewGlobal(c_ptr, dtype=f16, shape=[M, N])\n"
         "    sa = AllocateShared(f16, shape=[128, 64])\n"
         "    sb = AllocateShared(f16, shape=[64, 64])\n"
         "    acc = AllocateFragment(f32, shape=[128, 64])\n"
         "    Fill(acc, 0.0)\n" +
         before + "    for k in " + loop + ":\n" +
         "        Copy(a[bm * 128:, k * 64:], sa)\n"
         "        Copy(b[bn * 64:, k * 64:], sb)\n"
         "        Gemm(sa, sb, acc, transpose_b=True)\n" +
         (after.empty() ? "    Copy(acc, c[bm * 128:, bn * 64:])\n" : after);
}

struct Lowered {
  std::optional<ir::Program> program;
  std::string errors;
  bool regions = false;
};

// `text` parsed and lowered for `target` (the H100 unless named), verified after every pass.
Lowered lower_for(const std::string& text, const target::Target& target = target::Target::h100_sxm()) {
  Lowered out;
  Diagnostics diags;
  std::optional<ir::Program> p = ir::parse_program(text, diags);
  if (p) p = transform::lower(*std::move(p), diags, {.target = target, .verify_each_pass = true});
  out.errors = diags.render("ws.tile", text);
  if (!p) return out;
  struct Find : ir::IRVisitor {
    bool found = false;
    void visit_region(const ir::RegionStmt& r) override {
      found = true;
      ir::IRVisitor::visit_region(r);
    }
  } find;
  find.visit_program(*p);
  out.regions = find.found;
  out.program = std::move(p);
  return out;
}

// The kernel's product on the interpreter (regions under every default schedule) against doubles.
void expect_product(const std::string& text, int64_t m, int64_t n, int64_t k, bool regions) {
  Lowered l = lower_for(text);
  ASSERT_TRUE(l.program) << l.errors << text;
  EXPECT_EQ(l.regions, regions) << text;
  ops::GemmData data = ops::random_gemm_data(m, n, k, static_cast<uint32_t>(m + 3 * n + 7 * k));
  interp::Arguments args = data.args();
  Diagnostics diags;
  ASSERT_TRUE(interp::run_program(*l.program, args, diags)) << diags.render("ws.tile", text);
  EXPECT_EQ(ops::gemm_mismatch(data, data.c, std::ldexp(1.0, -10), std::ldexp(1.0, -24)), "") << text;
}

void expect_error(const std::string& text, const std::string& message) {
  Lowered l = lower_for(text);
  EXPECT_FALSE(l.program) << text;
  EXPECT_NE(l.errors.find(message), std::string::npos) << l.errors;
  EXPECT_NE(l.errors.find("ws.tile:"), std::string::npos) << l.errors;  // located
}

const char* kWs = "stages=3, tma=True, warp_specialize=True";

// `text` with every "k * 64:]" (the tiles of step k) replaced by `tile`.
std::string with_tiles(std::string text, const std::string& tile) {
  for (size_t at; (at = text.find("k * 64:]")) != std::string::npos;) text.replace(at, 8, tile);
  return text;
}

TEST(TileWarpSpecialize, LoopsThatDoNotStartAtZero) {
  // k from 1 (the tiles k - 1), and from 0 by 2 over twice the range (the tiles k / 2).
  expect_product(with_tiles(kernel("", std::string("Pipelined(1, ceil_div(K, 64) + 1, ") + kWs + ")", ""),
                            "(k - 1) * 64:]"),
                 70, 100, 200, true);
  expect_product(with_tiles(kernel("", std::string("Pipelined(0, 2 * ceil_div(K, 64), 2, ") + kWs + ")", ""),
                            "k / 2 * 64:]"),
                 130, 64, 320, true);
}

TEST(TileWarpSpecialize, NoIterationsAndPartialTiles) {
  const std::string text = kernel("", std::string("Pipelined(ceil_div(K, 64), ") + kWs + ")", "");
  expect_product(text, 130, 70, 0, true);  // C = 0
  expect_product(text, 1, 8, 8, true);
}

TEST(TileWarpSpecialize, AScalarAssignedBeforeTheConsumersReadIt) {
  expect_product(kernel("    steps = ceil_div(K, 64)\n", std::string("Pipelined(steps, ") + kWs + ")", ""),
                 64, 64, 192, true);
}

TEST(TileWarpSpecialize, ALaterTmaPipelineKeepsItsBarriersWithTheBlock) {
  const std::string after =
      "    Copy(acc, c[bm * 128:, bn * 64:])\n"
      "    sx = AllocateShared(f16, shape=[128, 64])\n"
      "    for j in Pipelined(1, stages=2, tma=True):\n"
      "        Copy(a[bm * 128:, j * 64:], sx)\n"
      "        Copy(sx, c[bm * 128:, bn * 64:])\n";
  // The second loop (its own TMA pipeline, whose barriers the block allocates before the regions) then
  // overwrites C with A's first 64 columns: with M = 128 and N = K = 64, C ends as A.
  Lowered l = lower_for(kernel("", std::string("Pipelined(ceil_div(K, 64), ") + kWs + ")", after));
  ASSERT_TRUE(l.program) << l.errors;
  EXPECT_TRUE(l.regions);
  ops::GemmData data = ops::random_gemm_data(128, 64, 64, 5);
  interp::Arguments args = data.args();
  Diagnostics diags;
  ASSERT_TRUE(interp::run_program(*l.program, args, diags)) << diags.render("ws.tile", "");
  EXPECT_EQ(data.c, std::vector<uint8_t>(data.a.begin(), data.a.begin() + 128 * 64 * 2));
}

TEST(TileWarpSpecialize, AStepThatIsNotAConstantIsPipelinedWithoutIt) {
  expect_product(
      kernel("    st = K / K\n", std::string("Pipelined(0, ceil_div(K, 64), st, ") + kWs + ")", ""), 64, 64,
      192, false);
}

TEST(TileWarpSpecialize, WhatCannotBeSplitIsALocatedError) {
  const std::string loop = std::string("Pipelined(kt, ") + kWs + ")";
  expect_error(kernel("    kt = 0\n    for i in range(ceil_div(K, 64)):\n        kt = kt + 1\n", loop, ""),
               "'kt' is the block's and is assigned after the loop, or under a loop or branch before it");
  expect_error(kernel("    kt = ceil_div(K, 64)\n    Fill(acc, kt)\n    kt = kt + 0\n", loop, ""),
               "'kt' is assigned after a statement that reads it");
  expect_error(
      kernel("    kt = ceil_div(K, 64)\n", loop, "    kt = 1\n    Copy(acc, c[bm * 128:, bn * 64:])\n"),
      "'kt' is the block's and is assigned after the loop");
  expect_error(kernel("    kt = ceil_div(K, 64)\n", loop,
                      "    sa = AllocateShared(f32, shape=[128, 64])\n    Copy(acc, sa)\n"
                      "    Copy(sa, c[bm * 128:, bn * 64:])\n"),
               "'sa' after the loop takes the name of the block's 'sa'");
  std::string broken = kernel("    kt = ceil_div(K, 64)\n", loop, "");
  broken.replace(broken.find("        Gemm("), 0, "        if k > 100:\n            break\n");
  expect_error(broken, "the loop's body has a break or continue");
  // What a region may not hold (ir/region_rules.h, the verifier's rule), where the consumers would run it.
  expect_error(kernel("    kt = ceil_div(K, 64)\n", loop, "    Exit()\n"),
               "the kernel has an Exit() where the consumers would run it");
  expect_error(
      kernel("    kt = ceil_div(K, 64)\n    if K > 0:\n        sz = AllocateShared(f16, shape=[8, 8])\n",
             loop, ""),
      "the kernel has a shared tensor or barrier allocated or freed where the consumers would run it");
}

// insert_barriers walks regions as the block for their body: a shared tile the block wrote before a section
// reaches the regions through one block Synchronize() before the section (not a region's own barrier inside
// each), and inside a region its own writes and reads get the region's barrier.
TEST(TileWarpSpecialize, BarriersAroundHandWrittenRegions) {
  const std::string text = R"(def f<1>[threads=256](f32* x_ptr, f32* y_ptr):
    x = ViewGlobal(x_ptr, dtype=f32, shape=[128])
    y = ViewGlobal(y_ptr, dtype=f32, shape=[2, 128])
    s = AllocateShared(f32, shape=[128])
    t = AllocateShared(f32, shape=[2, 128])
    Copy(x, s)
    with Warpgroups(0, 1):
        a = LoadShared(s, layout=spatial(128))
        Copy(a, t[0])
        b = LoadShared(t[0], layout=spatial(128))
        StoreGlobal(b, y[0])
    with Warpgroups(1, 2):
        c = LoadShared(s, layout=spatial(128))
        Copy(c, t[1])
        d = LoadShared(t[1], layout=spatial(128))
        StoreGlobal(d, y[1])
)";
  const Lowered l = lower_for(text, target::Target::generic_sm80());
  ASSERT_TRUE(l.program) << l.errors;
  const ir::Program* p = &*l.program;
  Diagnostics diags;
  // Top level: ..., the Copy's store, Synchronize, region, region.
  const ir::Block& body = p->body;
  ASSERT_GE(body.size(), 3u);
  ASSERT_EQ(body[body.size() - 1]->kind, ir::StmtKind::Region);
  ASSERT_EQ(body[body.size() - 2]->kind, ir::StmtKind::Region);
  const auto* sync = body[body.size() - 3]->as<ir::InstStmt>();
  ASSERT_TRUE(sync);
  EXPECT_EQ(sync->inst->kind, ir::InstKind::Synchronize);
  // Each region: its store to t, then its own barrier before it reads t back.
  for (size_t r : {body.size() - 2, body.size() - 1}) {
    int syncs = 0;
    for (const ir::Stmt& s : body[r]->as<ir::RegionStmt>()->body)
      if (const auto* is = s->as<ir::InstStmt>()) syncs += is->inst->kind == ir::InstKind::Synchronize;
    EXPECT_EQ(syncs, 1);
  }
  std::vector<uint8_t> xs(128 * 4), ys(2 * 128 * 4, 0xff);
  for (size_t i = 0; i < 128; ++i) {
    const float v = static_cast<float>(i) * 0.5f;
    std::memcpy(&xs[i * 4], &v, 4);
  }
  interp::Arguments args;
  args.buffers = {{"x_ptr", &xs}, {"y_ptr", &ys}};
  ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render("regions.tile", text);
  EXPECT_EQ(std::vector<uint8_t>(ys.begin(), ys.begin() + 512), xs);
  EXPECT_EQ(std::vector<uint8_t>(ys.begin() + 512, ys.end()), xs);
}

// Layout inference in hand-written regions: each region's fragments and loops are laid out over the
// region's own threads (128 here, in a block of 256), not the block's. Before, the fragments of a region got
// the block's layouts, which its threads alone cannot hold.
TEST(TileWarpSpecialize, FragmentsOfHandWrittenRegionsOverTheirThreads) {
  const std::string text = R"(def f<1>[threads=256](f32* x_ptr, f32* y_ptr):
    x = ViewGlobal(x_ptr, dtype=f32, shape=[2, 64, 32])
    y = ViewGlobal(y_ptr, dtype=f32, shape=[2, 64, 32])
    with Warpgroups(0, 1):
        a = AllocateFragment(f32, shape=[64, 32])
        Copy(x[0], a)
        for i, j in Parallel(64, 32):
            a[i, j] = a[i, j] * 2.0 + 1.0
        r = ReduceSum(a, dim=1)
        for i, j in Parallel(64, 32):
            y[0, i, j] = a[i, j] - r[i]
    with Warpgroups(1, 2):
        b = AllocateFragment(f32, shape=[64, 32])
        Copy(x[1], b)
        for i, j in Parallel(64, 32):
            b[i, j] = b[i, j] * 3.0
        Copy(b, y[1])
)";
  const Lowered l = lower_for(text, target::Target::generic_sm80());
  ASSERT_TRUE(l.program) << l.errors;
  const ir::Program* p = &*l.program;
  Diagnostics diags;
  // Every register tensor of a region is spread over 128 threads.
  struct Threads : ir::IRVisitor {
    std::vector<int64_t> seen;
    void visit_inst_stmt(const ir::InstStmt& s) override {
      for (const ir::Var& v : s.results)
        if (v->type.is_tensor() && v->type.tensor->scope == ir::Scope::Register && v->type.tensor->layout)
          seen.push_back(v->type.tensor->layout->num_threads());
      ir::IRVisitor::visit_inst_stmt(s);
    }
  } threads;
  threads.visit_program(*p);
  ASSERT_FALSE(threads.seen.empty());
  for (int64_t n : threads.seen) EXPECT_EQ(n, 128);
  std::vector<float> xs(2 * 64 * 32), ys(2 * 64 * 32, std::nanf(""));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 97) * 0.25f - 3.0f;
  std::vector<uint8_t> xb(xs.size() * 4), yb(ys.size() * 4);
  std::memcpy(xb.data(), xs.data(), xb.size());
  std::memcpy(yb.data(), ys.data(), yb.size());
  interp::Arguments args;
  args.buffers = {{"x_ptr", &xb}, {"y_ptr", &yb}};
  ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render("regions.tile", text);
  std::memcpy(ys.data(), yb.data(), yb.size());
  for (size_t i = 0; i < 64; ++i) {
    double sum = 0;
    for (size_t j = 0; j < 32; ++j) sum += 2.0 * xs[i * 32 + j] + 1.0;
    for (size_t j = 0; j < 32; ++j) {
      const size_t at = i * 32 + j, at1 = 64 * 32 + at;
      EXPECT_NEAR(ys[at], 2.0 * xs[at] + 1.0 - sum, 1e-3) << i << ", " << j;
      EXPECT_EQ(ys[at1], xs[at1] * 3.0f) << i << ", " << j;
    }
  }
}

}  // namespace
}  // namespace tilevm::tile
