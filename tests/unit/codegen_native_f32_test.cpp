// The emitter's native f32 path (emit_elementwise.cpp): Div, Sqrt, Fma and operations with an f32 scalar
// operand run as one correctly rounded IEEE instruction, which the code generator may only do because that
// is the interpreter's result (exact in double, rounded once) bit for bit. The CPU test holds the interpreter
// to the host's IEEE f32 arithmetic on random bit patterns (subnormals, infinities, NaNs, zeros of both
// signs among them); the GPU test holds the GPU to the interpreter, buffer for buffer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "tilevm/exec/gpu_runner.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/verifier.h"
#include "tilevm/support/diagnostics.h"

namespace tilevm {
namespace {

constexpr int kN = 1024;

constexpr const char* kProgram = R"(def native<1>[threads=32](f32* x_ptr, f32* y_ptr, f32* o_ptr, f32 s):
    gx = ViewGlobal(x_ptr, dtype=f32, shape=[1024])
    gy = ViewGlobal(y_ptr, dtype=f32, shape=[1024])
    go = ViewGlobal(o_ptr, dtype=f32, shape=[5, 1024])
    x = LoadGlobal(gx, layout=local(32).spatial(32))
    y = LoadGlobal(gy, layout=local(32).spatial(32))
    q = Div(x, y)
    StoreGlobal(q, go[0])
    r = Sqrt(x)
    StoreGlobal(r, go[1])
    m = Mul(x, 0.1)
    StoreGlobal(m, go[2])
    d = Div(s, y)
    StoreGlobal(d, go[3])
    f = Fma(x, y, 0.5)
    StoreGlobal(f, go[4])
)";

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// A third plain values, a third random bit patterns (every class of f32), a third special values.
std::vector<float> operands(std::mt19937& rng) {
  const float special[] = {0.0f,    -0.0f,  1.0f,    -1.0f,    INFINITY, -INFINITY,       1e-45f,
                           -1e-45f, 1e-38f, 3.4e38f, -3.4e38f, 2.0f,     1.17549435e-38f, 5.9e-39f};
  std::uniform_real_distribution<float> real(-4.0f, 4.0f);
  std::vector<float> v(kN);
  for (int i = 0; i < kN; ++i) {
    if (i % 3 == 0) v[static_cast<size_t>(i)] = real(rng);
    if (i % 3 == 1) v[static_cast<size_t>(i)] = from_bits(static_cast<uint32_t>(rng()));
    if (i % 3 == 2) v[static_cast<size_t>(i)] = special[rng() % std::size(special)];
  }
  return v;
}

std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

struct Buffers {
  std::map<std::string, std::vector<uint8_t>> buffers;
  interp::Arguments args;
};

Buffers prepared(const std::vector<float>& x, const std::vector<float>& y) {
  Buffers r;
  r.buffers = {
      {"x_ptr", bytes_of(x)}, {"y_ptr", bytes_of(y)}, {"o_ptr", std::vector<uint8_t>(5 * kN * 4, 0xff)}};
  r.args.scalars["s"] = interp::ScalarValue{true, 0, 1.5};
  return r;
}

void bind(Buffers& r) {
  for (auto& [n, b] : r.buffers) r.args.buffers[n] = &b;
}

// The interpreter's NaN is the canonical quiet one.
uint32_t canonical(float f) {
  return std::isnan(f) ? 0x7fc00000u : bits(f);
}

TEST(CodegenNativeF32, TheInterpreterComputesIeeeF32) {
  Diagnostics diags;
  std::optional<ir::Program> program = ir::parse_program(kProgram, diags);
  ASSERT_TRUE(program) << diags.render("native.tile", kProgram);
  // The interpreter runs what the verifier refuses too; the GPU half verifies, so this half must.
  ASSERT_TRUE(ir::verify_program(*program, diags)) << diags.render("native.tile", kProgram);
  std::mt19937 rng(11);
  const std::vector<float> x = operands(rng), y = operands(rng);
  Buffers run = prepared(x, y);
  bind(run);
  ASSERT_TRUE(interp::run_program(*program, run.args, diags)) << diags.render("native.tile", kProgram);
  std::vector<uint32_t> out(5 * kN);
  std::memcpy(out.data(), run.buffers["o_ptr"].data(), out.size() * 4);
  int bad = 0;
  for (int i = 0; i < kN && bad < 8; ++i) {
    const float a = x[static_cast<size_t>(i)], b = y[static_cast<size_t>(i)];
    const float want[5] = {a / b, std::sqrt(a), a * 0.1f, 1.5f / b, std::fma(a, b, 0.5f)};
    for (int k = 0; k < 5; ++k) {
      const uint32_t got = out[static_cast<size_t>(k * kN + i)];
      if (got == canonical(want[k])) continue;
      ++bad;
      ADD_FAILURE() << "operation " << k << " at " << i << " (" << a << ", " << b << "): interpreter 0x"
                    << std::hex << got << ", IEEE f32 0x" << canonical(want[k]) << std::dec;
    }
  }
}

TEST(CodegenNativeF32Gpu, TheGpuEqualsTheInterpreterBitForBit) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  Diagnostics diags;
  std::optional<ir::Program> program = ir::parse_program(kProgram, diags);
  ASSERT_TRUE(program);
  std::mt19937 rng(12);
  const std::vector<float> x = operands(rng), y = operands(rng);
  Buffers cpu = prepared(x, y), gpu = prepared(x, y);
  bind(cpu);
  bind(gpu);
  Diagnostics cd, gd;
  ASSERT_TRUE(interp::run_program(*program, cpu.args, cd)) << cd.render("native.tile", kProgram);
  ASSERT_TRUE(exec::run_on_gpu(*program, gpu.args, gd)) << gd.render("native.tile", kProgram);
  EXPECT_EQ(cpu.buffers["o_ptr"], gpu.buffers["o_ptr"]);
}

}  // namespace
}  // namespace tilevm
