// The quantized matmul's other programs and its GPU runner: dequantize and the word copy (dequant_gemm's
// transform) on the interpreter against ops::dequantize, every program compiled by NVRTC, and
// ops::QMatmulGpu (the path `tilevm qmatmul`, the tuner and the benchmark launch) on the GPU against the
// double reference, for a fused configuration, a split-K one and dequant_gemm.
#include <gtest/gtest.h>

#include "qmatmul_test_util.h"

#include <cstring>
#include <string>
#include <vector>

#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/exec/device_target.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/printer.h"
#include "tilevm/ops/qmatmul/qmatmul_gpu.h"
#include "tilevm/ops/qmatmul/qmatmul_reference.h"
#include "tilevm/runtime/cublas.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/transform/lower.h"
#include "tilevm/type/packing.h"

namespace tilevm::ops {
namespace {

interp::ScalarValue int_value(int64_t v) {
  return interp::ScalarValue{false, v, 0.0};
}

// Lowers and runs `program` on the interpreter; a failure is a test failure.
void run_interp(const ir::Program& built, interp::Arguments& args) {
  Diagnostics diags;
  const std::optional<ir::Program> program = transform::lower(built, diags, {.verify_each_pass = true});
  ASSERT_TRUE(program) << diags.render(built.name, ir::print_program(built));
  ASSERT_TRUE(interp::run_program(*program, args, diags))
      << diags.render(built.name, ir::print_program(*program));
}

std::vector<uint8_t> bytes_of(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> out(v.size() * 2);
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());  // memcpy from null is undefined, even of 0
  return out;
}

// Each dequantized weight is (code - zero) * scale rounded once to ATYPE: exactly ops::dequantize's value
// rounded to ATYPE (the program subtracts exactly and multiplies once; the f32 path's product is exact).
TEST(QMatmulDequantize, InterpreterMatchesDequantizeExactly) {
  const std::vector<QMatmulProblem> problems = {
      make_problem(1, 40, 64, DataType::int_(3), 32),
      make_problem(1, 40, 64, DataType::uint(4), 32, DataType::f16(), /*zero_point=*/true),
      make_problem(1, 40, 64, DataType::uint(8), 64, DataType::bf16(), true),
      make_problem(1, 40, 64, DataType::f8e4m3(), 64),
      make_problem(1, 40, 64, DataType::float_(6, 1), 64),  // wider than f16: the f32 path
      make_problem(1, 300, 40, DataType::int_(5), 40),      // per channel, ragged tiles in both dimensions
  };
  for (const QMatmulProblem& p : problems) {
    SCOPED_TRACE(p.key());
    const QMatmulCase c = make_case(p, 11);
    std::vector<uint8_t> codes = c.weight.codes, scales = bytes_of(c.weight.scales),
                         zeros = bytes_of(c.weight.zeros);
    std::vector<uint8_t> w(static_cast<size_t>(p.k * p.n * 2), 0xff);
    interp::Arguments args;
    args.buffers = {{"b_ptr", &codes}, {"scale_ptr", &scales}, {"w_ptr", &w}};
    if (p.zero_point) args.buffers["zero_ptr"] = &zeros;
    args.scalars = {{"n", int_value(p.n)}, {"k", int_value(p.k)}};
    run_interp(build_dequantize(p), args);
    const std::vector<double> expected = dequantize(c.weight);
    const std::vector<uint64_t> got = unpack(p.atype, w, p.k * p.n);
    int64_t bad = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      const uint64_t want = encode(p.atype, expected[i]);
      if (got[i] != want && bad++ < 3)
        ADD_FAILURE() << "element " << i << ": " << got[i] << ", want " << want;
    }
    EXPECT_EQ(bad, 0);
  }
}

TEST(QMatmulCopy, CopiesEveryWordOfThePackedCodes) {
  const QMatmulProblem p = make_problem(1, 37, 96, DataType::uint(3), 32);  // 1332 bytes: not whole 16s
  std::vector<uint8_t> codes(static_cast<size_t>(qmatmul_codes_bytes(p)));
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(i * 37 + 5);
  const QMatmulConfig dq = QMatmulConfig::parse("dequant_gemm");
  std::vector<uint8_t> t(static_cast<size_t>(qmatmul_transformed_bytes(p, dq)), 0);
  interp::Arguments args;
  args.buffers = {{"b_ptr", &codes}, {"t_ptr", &t}};
  args.scalars = {{"words", int_value(static_cast<int64_t>(t.size() / 4))}};
  run_interp(build_qmatmul_copy(p), args);
  // The copy holds every byte of the packed codes (rounded up to whole words), all of them compared.
  ASSERT_GE(t.size(), static_cast<size_t>(packed_bytes(p.wtype, p.k * p.n)));
  ASSERT_LE(t.size(), codes.size());
  EXPECT_TRUE(std::equal(t.begin(), t.end(), codes.begin()));
}

// Every program of the template, for a spread of problems and configurations, compiles with NVRTC.
TEST(QMatmulNvrtc, EveryProgramCompiles) {
  if (!runtime::nvrtc_available()) GTEST_SKIP() << "no NVRTC";
  struct Case {
    QMatmulProblem p;
    const char* config;
  };
  const std::vector<Case> cases = {
      {make_problem(16, 8192, 8192, DataType::uint(4), 128), "bm16_bn256_bk128_sk128_w1x8_s4_k8"},
      {make_problem(3, 100, 256, DataType::uint(2), 64, DataType::bf16(), true),
       "bm16_bn64_bk64_sk64_w1x2_s3_k2"},
      {make_problem(5, 64, 96, DataType::float_(6, 1), 96), "bm16_bn64_bk32_sk32_w1x2_s2_k1"},
      {make_problem(64, 256, 512, DataType::int_(8), 128), "bm64_bn64_bk64_sk64_w2x2_s3_k1"},
      {make_problem(1, 256, 512, DataType::uint(4), 128, DataType::f16(), true),
       "bm8_bn64_bk128_sk128_w1x2_s3_k2"},
      {make_problem(64, 256, 512, DataType::uint(4), 128), "bm64_bn128_bk128_sk128_w1x8_s3_k2_wg"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.p.key() + " " + c.config);
    const QMatmulConfig config = QMatmulConfig::parse(c.config);
    std::vector<ir::Program> programs = {build_qmatmul_transform(c.p, config), build_qmatmul(c.p, config),
                                         build_dequantize(c.p), build_qmatmul_copy(c.p)};
    for (const ir::Program& built : programs) {
      Diagnostics diags;
      const std::optional<ir::Program> program = transform::lower(
          built, diags, {.target = target::Target::for_arch("sm_90a"), .verify_each_pass = true});
      ASSERT_TRUE(program) << diags.render(built.name, ir::print_program(built));
      const codegen::cuda::EmittedKernel k =
          codegen::cuda::emit_cuda(*program, {.target = target::Target::for_arch("sm_90a")});
      EXPECT_NO_THROW(runtime::compile_cuda(k.source, k.kernel_name + ".cu", {.arch = "sm_90a"}))
          << built.name;
    }
  }
}

// ops::QMatmulGpu on device memory: transform, run, against the double reference with the output poisoned.
TEST(QMatmulGpu, RunnerMatchesTheReference) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  runtime::Device device = runtime::Device::open();
  const runtime::Stream stream = device.create_stream();
  struct Case {
    QMatmulProblem p;
    const char* config;
  };
  std::vector<Case> cases = {
      {make_problem(5, 300, 512, DataType::uint(4), 128), "bm16_bn256_bk128_sk128_w1x8_s4_k1"},
      {make_problem(19, 200, 512, DataType::int_(3), 64, DataType::bf16()),
       "bm16_bn64_bk128_sk64_w1x4_s3_k4"},
      {make_problem(7, 96, 256, DataType::uint(6), 256, DataType::f16(), true),
       "bm16_bn64_bk64_sk64_w1x2_s3_k2"},
  };
  if (runtime::Cublas::available())
    cases.push_back({make_problem(40, 96, 256, DataType::f8e4m3(), 128), "dequant_gemm"});
  else
    ADD_FAILURE() << "cuBLAS is not available on this GPU machine: dequant_gemm goes untested";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.p.key() + " " + c.config);
    const QMatmulCase data = make_case(c.p, 23);
    const QMatmulConfig config = QMatmulConfig::parse(c.config);
    const QMatmulGpu q =
        QMatmulGpu::load(device, compile_qmatmul(c.p, config, exec::device_target(device.info())));
    auto upload = [&](const void* src, size_t bytes, size_t capacity) {
      runtime::DeviceBuffer b = device.allocate(std::max({bytes, capacity, size_t{16}}));
      if (bytes) b.copy_from_host(src, bytes);
      return b;
    };
    runtime::DeviceBuffer a = upload(data.a.data(), data.a.size() * 2, 0);
    runtime::DeviceBuffer codes = upload(data.weight.codes.data(), data.weight.codes.size(),
                                         static_cast<size_t>(qmatmul_codes_bytes(c.p)));
    runtime::DeviceBuffer scales = upload(data.weight.scales.data(), data.weight.scales.size() * 2, 0);
    runtime::DeviceBuffer zeros = upload(data.weight.zeros.data(), data.weight.zeros.size() * 2, 0);
    runtime::DeviceBuffer t = device.allocate(std::max<uint64_t>(q.transformed_bytes(), 16));
    runtime::DeviceBuffer workspace = device.allocate(std::max<uint64_t>(q.workspace_bytes(), 16));
    runtime::DeviceBuffer out = device.allocate(static_cast<size_t>(c.p.m * c.p.n * 2));
    out.fill_bytes(0xff);  // NaN: an output the kernel skips shows
    workspace.fill_bytes(0xff);
    runtime::DeviceBuffer counters = device.allocate(std::max<uint64_t>(q.counter_bytes(), 16));
    counters.fill_bytes(0);
    q.transform(stream, codes.device_ptr(), t.device_ptr());
    q.run(stream, {.a = a.device_ptr(),
                   .transformed = t.device_ptr(),
                   .scales = scales.device_ptr(),
                   .zeros = c.p.zero_point ? zeros.device_ptr() : 0,
                   .c = out.device_ptr(),
                   .workspace = workspace.device_ptr(),
                   .counters = counters.device_ptr()});
    stream.synchronize();
    // Split-K's ticket counters are back at 0 for the next run.
    std::vector<uint8_t> left(counters.size());
    counters.copy_to_host(left.data(), left.size());
    EXPECT_EQ(left, std::vector<uint8_t>(left.size(), 0));
    std::vector<uint16_t> got(static_cast<size_t>(c.p.m * c.p.n));
    out.copy_to_host(got.data(), got.size() * 2);
    const QMatmulCheck check =
        check_qmatmul(c.p, got, qmatmul_reference(c.p, data.a, data.weight), config.dequant_gemm);
    EXPECT_TRUE(check.passed()) << check.summary();
  }
}

}  // namespace
}  // namespace tilevm::ops
