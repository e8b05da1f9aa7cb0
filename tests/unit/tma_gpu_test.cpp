// Barriers and TMA copies on the GPU against the interpreter: examples/tma_scale.tile (a two-stage TMA
// pipeline) and examples/tma_store_scale.tile (the same with TMA stores of the results) on fresh random
// matrices, the output poisoned with NaN first, for shapes with a partial last row tile (the tensor map
// fills the rows past M with zeros and the store clips them) and several blocks.
// Skipped (and reported) without a GPU; the tensor-map rules are runtime_tensor_map_test.cpp's.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "codegen_test_util.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/type/convert.h"

namespace tilevm {
namespace {

// f16 codes of values in [-4, 4) (doubling them is exact in f16), and NaN codes for the output.
std::pair<std::vector<uint8_t>, std::vector<uint8_t>> doubling_inputs(int m, int n, std::mt19937& rng) {
  std::uniform_real_distribution<double> real(-4.0, 4.0);
  std::vector<uint8_t> x(static_cast<size_t>(m) * n * 2), y_nan(x.size());
  for (size_t i = 0; i < x.size() / 2; ++i) {
    const auto c = static_cast<uint16_t>(encode(DataType::f16(), real(rng)));
    std::memcpy(&x[2 * i], &c, 2);
    const uint16_t nan = 0x7e00;
    std::memcpy(&y_nan[2 * i], &nan, 2);
  }
  return {x, y_nan};
}

// Runs `example` (y = x + x over [M, N], a TMA pipeline) on the interpreter and, with `gpu`, on the GPU
// (lowered there for the device), each on the same fresh input with y poisoned: the interpreter's y must be
// 2x everywhere, and the GPU's equal to it bit for bit.
// `hopper`: on the interpreter, the program as the tile layer lowers it for the H100 (the GPU lowers for its
// own target).
void expect_doubled(const std::string& example, bool gpu, bool hopper = false) {
  const std::optional<ir::Program> p =
      codegen_test::load_program(codegen_test::source_root() / "examples" / example,
                                 hopper ? target::Target::h100_sxm() : target::Target::generic_sm80());
  ASSERT_TRUE(p);
  if (hopper) {
    struct Finder : ir::IRVisitor {
      bool stores = false;
      void visit_inst_stmt(const ir::InstStmt& s) override {
        stores |= s.inst->kind == ir::InstKind::StoreTma;
      }
    } finder;
    finder.visit_program(*p);
    EXPECT_TRUE(finder.stores) << "the tile layer did not store the tile with the TMA";
  }
  std::mt19937 rng(20261126);
  std::vector<std::pair<int, int>> shapes = {{40, 128}, {37, 192}, {256, 512}, {5, 64}};
  // The tile layer's example has the constant width W = 256.
  if (example.starts_with("tile/")) shapes = {{40, 256}, {37, 256}, {5, 256}};
  for (const auto& [m, n] : shapes) {
    SCOPED_TRACE(fmt::format("{}: M = {}, N = {}", example, m, n));
    const auto [x, y_nan] = doubling_inputs(m, n, rng);
    std::vector<uint8_t> x_cpu = x, y_cpu = y_nan, x_gpu = x, y_gpu = y_nan;
    interp::Arguments cpu, devices;
    for (interp::Arguments* a : {&cpu, &devices}) {
      a->scalars["M"] = interp::ScalarValue{false, m, 0.0};
      a->scalars["N"] = interp::ScalarValue{false, n, 0.0};
    }
    cpu.buffers["x_ptr"] = &x_cpu;
    cpu.buffers["y_ptr"] = &y_cpu;
    devices.buffers["x_ptr"] = &x_gpu;
    devices.buffers["y_ptr"] = &y_gpu;
    Diagnostics cd, gd;
    ASSERT_TRUE(interp::run_program(*p, cpu, cd)) << cd.render(example, "");
    // The interpreter is the reference: y = x + x, exact in f16 for these values.
    for (size_t i = 0; i < x.size() / 2; ++i) {
      uint16_t xc, yc;
      std::memcpy(&xc, &x[2 * i], 2);
      std::memcpy(&yc, &y_cpu[2 * i], 2);
      ASSERT_EQ(decode(DataType::f16(), yc), 2 * decode(DataType::f16(), xc)) << "interpreter, element " << i;
    }
    if (!gpu) continue;
    // The program as written: run_on_gpu lowers it for the device (the tile layer's TMA store on Hopper).
    const std::string source = codegen_test::read_text(codegen_test::source_root() / "examples" / example);
    const std::optional<ir::Program> written = ir::parse_program(source, gd);
    ASSERT_TRUE(written && exec::run_on_gpu(*written, devices, gd)) << gd.render(example, source);
    EXPECT_EQ(y_gpu, y_cpu);
  }
}

TEST(TmaGpu, PipelineMatchesTheInterpreter) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  expect_doubled("tma_scale.tile", true);
}

// TMA stores (examples/tma_store_scale.tile): two output buffers, StoreTmaWait(1) between their uses, the
// last row tile clipped at M.
TEST(TmaGpu, StoresMatchTheInterpreter) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  expect_doubled("tma_store_scale.tile", true);
}

// The same on the interpreter alone (CI has no GPU): the stores write every element of y, clipped rows too.
TEST(TmaInterp, StoresDoubleEveryElement) {
  expect_doubled("tma_store_scale.tile", false);
}

// The tile layer's Copy(shared, global) as a TMA store (examples/tile/scale_tma_store.tile): lowered for the
// H100 on the interpreter (the program has its StoreTma), and on the GPU.
TEST(TmaInterp, TileLayerStoresWithTheTma) {
  expect_doubled("tile/scale_tma_store.tile", false, true);
}

TEST(TmaGpu, TileLayerStoresMatchTheInterpreter) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  expect_doubled("tile/scale_tma_store.tile", true);
}

}  // namespace
}  // namespace tilevm
