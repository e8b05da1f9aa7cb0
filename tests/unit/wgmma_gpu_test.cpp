// wgmma on the GPU: examples/gemm_f16_wgmma.tile (TMA into 128-byte swizzled stages, DotAsync on
// wgmma.m64n256k16, DotAsyncWait(1)) against a double-precision product on fresh random matrices, the output
// poisoned with NaN first; shapes with one and several blocks and K from one step to more than the pipeline
// holds. The same program with a synchronous Dot of the shared tiles (wgmma waited at once) too, and the
// interpreter on the smallest shape; the warp-specialized version of the GEMM, its persistent form and the
// ping-pong one.
// Skipped (and reported) without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "codegen_test_util.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ops/gemm/gemm_data.h"
#include "tilevm/type/convert.h"

namespace tilevm {
namespace {

double f16_at(const std::vector<uint8_t>& v, size_t i) {
  uint16_t c;
  std::memcpy(&c, &v[2 * i], 2);
  return decode(DataType::f16(), c);
}

ir::Program gemm_program(bool synchronous, const char* file = "gemm_f16_wgmma.tile") {
  std::string text = codegen_test::read_text(codegen_test::source_root() / "examples" / file);
  if (synchronous) {
    const std::string async =
        "DotAsync(sa[stage], sb[stage], acc, transpose_b=True)\n        DotAsyncWait(1)";
    const size_t at = text.find(async);
    EXPECT_NE(at, std::string::npos);
    text.replace(at, async.size(), "Dot(sa[stage], sb[stage], acc, transpose_b=True, out=acc)");
  }
  Diagnostics diags;
  std::optional<ir::Program> p = ir::parse_program(text, diags);
  if (p && !diags.has_errors()) p = transform::lower(*std::move(p), diags, {.verify_each_pass = true});
  EXPECT_TRUE(p && !diags.has_errors()) << diags.render("gemm_f16_wgmma.tile", text);
  return *p;
}

// `blocks` > 0: the persistent GEMM's BLOCKS.
void check_gemm(const ir::Program& p, int m, int n, int k, bool with_interpreter, int blocks = 0) {
  SCOPED_TRACE(fmt::format("M = {}, N = {}, K = {}, BLOCKS = {}", m, n, k, blocks));
  ops::GemmData gpu = ops::random_gemm_data(m, n, k, static_cast<uint32_t>(20261126 + m + n + k));
  ops::GemmData cpu = gpu;
  interp::Arguments gpu_args = gpu.args();
  if (blocks > 0) gpu_args.scalars["BLOCKS"] = interp::ScalarValue{false, blocks, 0.0};
  Diagnostics gd;
  ASSERT_TRUE(exec::run_on_gpu(p, gpu_args, gd)) << gd.render("gemm_f16_wgmma.tile", "");
  // f32 accumulation of K products of f16 values, then one rounding to f16.
  EXPECT_EQ(ops::gemm_mismatch(gpu, gpu.c, std::ldexp(1.0, -10), 1e-5 * k), "");
  if (with_interpreter) {
    interp::Arguments cpu_args = cpu.args();
    if (blocks > 0) cpu_args.scalars["BLOCKS"] = interp::ScalarValue{false, blocks, 0.0};
    Diagnostics cd;
    ASSERT_TRUE(interp::run_program(p, cpu_args, cd)) << cd.render("gemm_f16_wgmma.tile", "");
    // The interpreter sums exactly and rounds once; the tensor cores round their f32 partial sums: one f16
    // ulp.
    for (size_t i = 0; i < cpu.c.size() / 2; ++i) {
      const double x = f16_at(cpu.c, i), y = f16_at(gpu.c, i);
      ASSERT_LE(std::abs(x - y), std::abs(x) * std::ldexp(1.0, -10) + 1e-5 * k) << "element " << i;
    }
  }
}

TEST(WgmmaGpu, GemmMatchesTheProduct) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  const ir::Program p = gemm_program(false);
  check_gemm(p, 128, 256, 64, true);
  check_gemm(p, 256, 512, 320, false);
  check_gemm(p, 384, 768, 1024, false);
}

TEST(WgmmaGpu, SynchronousDotOfSharedTiles) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  const ir::Program p = gemm_program(true);
  check_gemm(p, 128, 256, 64, true);
  check_gemm(p, 256, 512, 384, false);
}

// examples/gemm_f16_wgmma_ws.tile: a TMA producer warpgroup and two wgmma consumer warpgroups.
TEST(WgmmaGpu, WarpSpecializedGemm) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  const ir::Program p = gemm_program(false, "gemm_f16_wgmma_ws.tile");
  check_gemm(p, 128, 256, 64, true);
  check_gemm(p, 200, 600, 520, false);
  check_gemm(p, 384, 768, 1024, false);
}

// examples/gemm_f16_persistent.tile: the warp-specialized GEMM on fewer blocks than tiles, each block's
// pipeline running on from one tile into the next: one tile, nine tiles over two and four blocks, a block for
// every tile, and 256 tiles over 132 blocks.
TEST(WgmmaGpu, PersistentGemm) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  const ir::Program p = gemm_program(false, "gemm_f16_persistent.tile");
  check_gemm(p, 128, 256, 64, true, 1);
  check_gemm(p, 300, 600, 520, false, 2);
  check_gemm(p, 384, 768, 1024, false, 4);
  check_gemm(p, 1000, 1000, 1000, false, 132);
  check_gemm(p, 2048, 4096, 256, false, 132);
}

// examples/gemm_f16_pingpong.tile: the persistent GEMM whose two consumer warpgroups take alternate tiles
// (one tile: the second warpgroup idle; eight and seven tiles per block; 256 tiles over 132 blocks).
TEST(WgmmaGpu, PingPongGemm) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  const ir::Program p = gemm_program(false, "gemm_f16_pingpong.tile");
  check_gemm(p, 128, 128, 64, true, 1);
  check_gemm(p, 300, 600, 520, false, 2);
  check_gemm(p, 384, 768, 1024, false, 4);
  check_gemm(p, 2048, 2048, 256, false, 132);
}

// examples/gemm_f16_pingpong_cluster.tile: the ping-pong GEMM in clusters of two blocks sharing each B tile
// through TMA multicast (one cluster with a pair of tile rows, the second block's past M; two and three
// clusters over uneven pairs; 66 clusters).
TEST(WgmmaGpu, PingPongClusterGemm) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  const ir::Program p = gemm_program(false, "gemm_f16_pingpong_cluster.tile");
  check_gemm(p, 128, 128, 64, true, 2);
  check_gemm(p, 300, 600, 520, false, 4);
  check_gemm(p, 384, 768, 1024, false, 6);
  check_gemm(p, 2048, 2048, 256, false, 132);
}

}  // namespace
}  // namespace tilevm
