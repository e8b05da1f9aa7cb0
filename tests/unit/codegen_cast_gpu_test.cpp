// Cast f32 -> f16 and f32 -> bf16 on the GPU, bit for bit against cast_code: the emitter converts a
// fragment whose every value lies below the rounding limit with packing cvt.rn instructions, and any other
// fragment per element with the saturation and NaN rules (emit_cast.cpp). Each thread's fragment is one row:
// plain rows take the first path, rows holding one special value (NaN, inf, a value at or past the limit)
// the second, and the other values of those rows must convert as well; subnormal results (f16's and bf16's)
// and -0 are plain values of either path. Rows of 8 values (whole
// pairs) and of 7 (the last value alone). The interpreter runs the same program as a check of the test.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tilevm/exec/gpu_runner.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/parser.h"
#include "tilevm/transform/lower.h"
#include "tilevm/type/convert.h"

namespace tilevm {
namespace {

constexpr int kRows = 256;  // 8 blocks of 32 threads, one row a thread

std::string program_text(int width) {
  return fmt::format(R"(def cast_rows<R / 32>[threads=32](f32* x_ptr, f16* h_ptr, bf16* b_ptr, i32 R):
    pid = BlockIndices()
    gx = ViewGlobal(x_ptr, dtype=f32, shape=[R, {0}])
    gh = ViewGlobal(h_ptr, dtype=f16, shape=[R, {0}])
    gb = ViewGlobal(b_ptr, dtype=bf16, shape=[R, {0}])
    x = LoadGlobal(gx[pid * 32:, 0:], layout=spatial(32, 1).local(1, {0}))
    h = Cast(x, dtype=f16)
    StoreGlobal(h, gh[pid * 32:, 0:])
    b = Cast(x, dtype=bf16)
    StoreGlobal(b, gb[pid * 32:, 0:])
)",
                     width);
}

ir::Program load(int width) {
  Diagnostics diags;
  const std::string text = program_text(width);
  std::optional<ir::Program> p = ir::parse_program(text, diags);
  EXPECT_TRUE(p && !diags.has_errors()) << diags.render("cast_rows.tile", text);
  std::optional<ir::Program> lowered = transform::lower(
      *std::move(p), diags, {.target = target::Target::generic_sm80(), .verify_each_pass = true});
  EXPECT_TRUE(lowered) << diags.render("cast_rows.tile", text);
  return *std::move(lowered);
}

// The f32 bit patterns: rows of ordinary values, and rows with one special value at a varying position.
std::vector<uint32_t> inputs(int width) {
  const float max = std::numeric_limits<float>::max();
  const std::vector<uint32_t> specials = {
      0x7fc00000u,
      0xffc00001u,
      0x7f800001u,  // NaNs (quiet, negative with payload, signalling)
      0x7f800000u,
      0xff800000u,                                              // +-inf
      std::bit_cast<uint32_t>(65504.0f),                        // f16's largest
      std::bit_cast<uint32_t>(std::nextafter(65520.0f, 0.0f)),  // just below f16's rounding limit
      std::bit_cast<uint32_t>(65520.0f),
      std::bit_cast<uint32_t>(-65520.0f),
      std::bit_cast<uint32_t>(1e5f),
      std::bit_cast<uint32_t>(-1e30f),
      std::bit_cast<uint32_t>(max),
      std::bit_cast<uint32_t>(-max),
      0x7f7f8000u,
      0x7f7f7fffu,
      0xff7f8000u,  // bf16's rounding limit, just below it, negative
      std::bit_cast<uint32_t>(1e-7f),
      std::bit_cast<uint32_t>(-3e-8f),  // f16 subnormals and below
      0x00000001u,
      0x80000000u,  // the smallest f32, -0
      0x00400000u,
      0x80010000u,  // bf16 subnormals (0x0040, 0x8001)
  };
  std::mt19937 rng(20261129);
  std::uniform_real_distribution<float> real(-70000.0f, 70000.0f);
  std::vector<uint32_t> x(static_cast<size_t>(kRows) * width);
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < width; ++c) {
      // Mostly below 65520 in magnitude; rows whose random values pass it take the slow path too.
      float v = real(rng);
      if (r % 4 != 3) v = std::fmod(v, 65000.0f);
      x[static_cast<size_t>(r * width + c)] = std::bit_cast<uint32_t>(v);
    }
    if (r % 2 == 1)
      x[static_cast<size_t>(r * width + r % width)] = specials[static_cast<size_t>(r / 2) % specials.size()];
  }
  return x;
}

std::vector<uint8_t> bytes_of(const std::vector<uint32_t>& w) {
  std::vector<uint8_t> b(w.size() * 4);
  std::memcpy(b.data(), w.data(), b.size());
  return b;
}

// Runs the program (on the GPU or the interpreter) and compares every output code with cast_code.
void expect_cast_rules(int width, bool gpu) {
  const ir::Program p = load(width);
  const std::vector<uint32_t> x = inputs(width);
  std::vector<uint8_t> xb = bytes_of(x), h(x.size() * 2, 0xee), b(x.size() * 2, 0xee);  // poisoned
  interp::Arguments args;
  args.buffers["x_ptr"] = &xb;
  args.buffers["h_ptr"] = &h;
  args.buffers["b_ptr"] = &b;
  args.scalars["R"] = interp::ScalarValue{false, kRows, 0.0};
  Diagnostics diags;
  const bool ok = gpu ? exec::run_on_gpu(p, args, diags) : interp::run_program(p, args, diags);
  ASSERT_TRUE(ok) << diags.render("cast_rows.tile", program_text(width));
  int mismatches = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    for (const auto& [to, out] : {std::pair{DataType::f16(), &h}, std::pair{DataType::bf16(), &b}}) {
      uint16_t got;
      std::memcpy(&got, out->data() + 2 * i, 2);
      const uint64_t want = cast_code(DataType::f32(), to, x[i]);
      if (got != want && ++mismatches <= 8) {
        ADD_FAILURE() << (gpu ? "GPU" : "interpreter") << ", width " << width << ", row " << i / width
                      << ": f32 0x" << std::hex << x[i] << " -> " << to.name() << " gives 0x" << got
                      << ", expected 0x" << want;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(CastNarrowing, InterpreterFollowsTheRules) {
  for (int width : {8, 7}) expect_cast_rules(width, false);
}

TEST(CastNarrowingGpu, PackedAndPerElementPathsFollowTheRules) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int width : {8, 7}) expect_cast_rules(width, true);
}

}  // namespace
}  // namespace tilevm
