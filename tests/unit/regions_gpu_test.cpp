// Warp-specialized regions on the GPU against the interpreter: examples/tma_warp_specialized.tile (a TMA
// producer warpgroup that gives up registers, two consumer warpgroups that take them) on fresh random
// matrices, the outputs poisoned with NaN first, for shapes with a partial last row tile and several blocks.
// The doubled tile must agree bit for bit; the row sums within f32 rounding (the GPU adds in another order).
// Skipped (and reported) without a GPU. Regions without TMA (tests/golden/run/regions_loop.tile) run in
// CodegenGpu.InterpreterAndGpuAgree.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "codegen_test_util.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm {
namespace {

TEST(RegionsGpu, WarpSpecializedExampleMatchesTheInterpreter) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  const std::optional<ir::Program> p =
      codegen_test::load_program(codegen_test::source_root() / "examples" / "tma_warp_specialized.tile");
  ASSERT_TRUE(p);
  std::mt19937 rng(20261127);
  std::uniform_real_distribution<double> real(-4.0, 4.0);
  for (const auto& [m, n] :
       std::vector<std::pair<int, int>>{{40, 128}, {37, 192}, {256, 512}, {5, 64}, {1000, 64}}) {
    SCOPED_TRACE(fmt::format("M = {}, N = {}", m, n));
    std::vector<uint8_t> x(static_cast<size_t>(m) * n * 2), y_nan(x.size()),
        s_nan(static_cast<size_t>(m) * (n / 64) * 4);
    for (size_t i = 0; i < x.size() / 2; ++i) {
      const auto c = static_cast<uint16_t>(encode(DataType::f16(), real(rng)));
      std::memcpy(&x[2 * i], &c, 2);
      const uint16_t nan = 0x7e00;
      std::memcpy(&y_nan[2 * i], &nan, 2);
    }
    for (size_t i = 0; i < s_nan.size() / 4; ++i) {
      const uint32_t nan = 0x7fc00000u;
      std::memcpy(&s_nan[4 * i], &nan, 4);
    }
    std::vector<uint8_t> x_cpu = x, y_cpu = y_nan, s_cpu = s_nan, x_gpu = x, y_gpu = y_nan, s_gpu = s_nan;
    interp::Arguments cpu, gpu;
    for (interp::Arguments* a : {&cpu, &gpu}) {
      a->scalars["M"] = interp::ScalarValue{false, m, 0.0};
      a->scalars["N"] = interp::ScalarValue{false, n, 0.0};
    }
    cpu.buffers = {{"x_ptr", &x_cpu}, {"y_ptr", &y_cpu}, {"s_ptr", &s_cpu}};
    gpu.buffers = {{"x_ptr", &x_gpu}, {"y_ptr", &y_gpu}, {"s_ptr", &s_gpu}};
    Diagnostics cd, gd;
    ASSERT_TRUE(interp::run_program(*p, cpu, cd)) << cd.render("tma_warp_specialized.tile", "");
    ASSERT_TRUE(exec::run_on_gpu(*p, gpu, gd)) << gd.render("tma_warp_specialized.tile", "");
    EXPECT_EQ(y_gpu, y_cpu);
    for (size_t i = 0; i < s_cpu.size() / 4; ++i) {
      const double a = decode(DataType::f32(), get_code(s_cpu.data(), 32, static_cast<int64_t>(i)));
      const double b = decode(DataType::f32(), get_code(s_gpu.data(), 32, static_cast<int64_t>(i)));
      ASSERT_LE(std::fabs(a - b), 1e-5 * std::max(1.0, std::fabs(a)))
          << "row sum " << i << ": " << a << " vs " << b;
    }
  }
}

}  // namespace
}  // namespace tilevm
