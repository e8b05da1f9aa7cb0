// ops::build_qmatmul (include/tilevm/ops/qmatmul.h): the quantized matmul program for every weight type of
// 1 to 8 bits, verified and run on the interpreter against a double-precision reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tilevm/codegen/cuda/gpu_runner.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/printer.h"
#include "tilevm/ir/verifier.h"
#include "tilevm/ops/qmatmul.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::ops {
namespace {

const DataType kF16 = DataType::f16();

// The weight types issue 5 asks for: integers and floats of 1 to 8 bits.
std::vector<DataType> weight_types() {
  std::vector<DataType> types;
  for (DataType t : all_data_types()) {
    if (!t.is_bool() && t.bits() <= 8 && (t.is_integer() || t.is_float())) types.push_back(t);
  }
  return types;
}

struct Problem {
  int64_t m, n, k;
  QMatmulConfig config;
};

struct Inputs {
  std::vector<double> a;              // [m, k] values (exact f16)
  std::vector<uint64_t> b_codes;      // [k, n] codes of wtype, all finite
  std::vector<uint64_t> scale_codes;  // [k / G, n] f16 codes, positive
  std::vector<uint8_t> a_bytes, b_bytes, scale_bytes;
};

Inputs make_inputs(const Problem& p, uint32_t seed) {
  const DataType w = p.config.wtype;
  std::mt19937 rng(seed);
  Inputs in;
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<uint64_t> a_codes;
  for (int64_t i = 0; i < p.m * p.k; ++i) {
    a_codes.push_back(encode(kF16, unit(rng)));
    in.a.push_back(decode(kF16, a_codes.back()));
  }
  // Uniform over the finite codes (NaN and infinity codes are redrawn); q = the largest magnitude.
  std::uniform_int_distribution<uint64_t> code_dist(0, (uint64_t{1} << w.bits()) - 1);
  double q = 0.0;
  for (uint64_t c = 0; c < (uint64_t{1} << w.bits()); ++c) {
    if (std::isfinite(decode(w, c))) q = std::max(q, std::abs(decode(w, c)));
  }
  for (int64_t i = 0; i < p.k * p.n; ++i) {
    uint64_t c = code_dist(rng);
    while (!std::isfinite(decode(w, c))) c = code_dist(rng);
    in.b_codes.push_back(c);
  }
  // Positive scales in [0.5, 1] / q, so |dequantized weight| <= 1. Where that is below f16's range
  // (f8e6m1's range is wider than f16's) the scale is one of the four smallest f16 subnormals instead, still
  // random so that groups differ.
  std::uniform_real_distribution<double> half_one(0.5, 1.0);
  std::uniform_int_distribution<uint64_t> tiny(1, 4);
  for (int64_t i = 0; i < (p.k / p.config.group) * p.n; ++i) {
    uint64_t c = encode(kF16, half_one(rng) / std::max(q, 1.0));
    if (c <= 4) c = tiny(rng);
    in.scale_codes.push_back(c);
  }
  in.a_bytes = pack(kF16, a_codes);
  in.b_bytes = pack(w, in.b_codes);
  in.scale_bytes = pack(kF16, in.scale_codes);
  return in;
}

// C in double. Each dequantized weight is f16(decode(code) * scale), the program's definition (the mma's B
// operand is f16); `group_shift` picks the scale of group (g + shift) % groups instead, a wrong reference
// for the sanity check.
std::vector<double> reference(const Problem& p, const Inputs& in, int64_t group_shift = 0) {
  const int64_t groups = p.k / p.config.group;
  std::vector<double> c(static_cast<size_t>(p.m * p.n), 0.0);
  for (int64_t kk = 0; kk < p.k; ++kk) {
    for (int64_t j = 0; j < p.n; ++j) {
      const int64_t g = (kk / p.config.group + group_shift) % groups;
      const double s = decode(kF16, in.scale_codes[static_cast<size_t>(g * p.n + j)]);
      const double w = decode(
          kF16, encode(kF16, decode(p.config.wtype, in.b_codes[static_cast<size_t>(kk * p.n + j)]) * s));
      for (int64_t i = 0; i < p.m; ++i)
        c[static_cast<size_t>(i * p.n + j)] += in.a[static_cast<size_t>(i * p.k + kk)] * w;
    }
  }
  return c;
}

// Tolerance: the reference already rounds each weight to f16 as the program does, and each product of two
// f16 values is exact in f32 (22 significant bits), so what remains is the f32 accumulation (K <= 64 terms
// of magnitude <= 1: at most about K * 2^-24 * K ~ 2.5e-4 absolute; f8e6m1, whose weights reach ~10^3
// because f16 has no scale small enough, has partial sums up to ~10^4 and a worst case ~10^-2, typically
// ~10^-3) and the final rounding to f16 (half an ulp: <= 2^-11 |ref|, or 2^-25 in the subnormal range).
// |ref| * 2^-9 + 1e-2 is 4x the final rounding plus the worst accumulation error, yet far below a wrong
// element (a wrong scale or a dropped k-step moves C by O(0.1..1); the sanity checks below show it fails).
// Returns the number of mismatches; describes the first few in `report`.
int64_t mismatches(const std::vector<uint8_t>& got_bytes, const std::vector<double>& expected, int64_t n,
                   std::string* report) {
  std::vector<uint64_t> got = unpack(kF16, got_bytes, static_cast<int64_t>(expected.size()));
  int64_t count = 0;
  std::ostringstream os;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double v = decode(kF16, got[i]);
    const double tol = std::ldexp(std::abs(expected[i]), -9) + 1e-2;
    if (!(std::abs(v - expected[i]) <= tol)) {
      if (count < 5)
        os << "C[" << static_cast<int64_t>(i) / n << ", " << static_cast<int64_t>(i) % n << "] = " << v
           << ", expected " << expected[i] << " (tolerance " << tol << ")\n";
      ++count;
    }
  }
  if (report) *report = os.str();
  return count;
}

// Builds, verifies and runs the program on the interpreter or the GPU; returns C's bytes (empty on failure,
// with a test failure added).
std::vector<uint8_t> run_qmatmul(const Problem& p, Inputs& in, bool on_gpu = false) {
  ir::Program program = build_qmatmul(p.config);
  Diagnostics diags;
  if (!ir::verify_program(program, diags)) {
    ADD_FAILURE() << "verify failed:\n" << diags.render("qmatmul", ir::print_program(program));
    return {};
  }
  std::vector<uint8_t> c(static_cast<size_t>(p.m * p.n * 2), 0xff);  // NaN: unwritten elements show
  interp::Arguments args;
  args.buffers = {
      {"a_ptr", &in.a_bytes}, {"b_ptr", &in.b_bytes}, {"scale_ptr", &in.scale_bytes}, {"c_ptr", &c}};
  args.scalars = {{"m", {false, p.m, 0.0}}, {"n", {false, p.n, 0.0}}, {"k", {false, p.k, 0.0}}};
  const bool ok = on_gpu ? codegen::cuda::run_on_gpu(program, args, diags) : interp::run_program(program, args, diags);
  if (!ok) {
    ADD_FAILURE() << "run failed:\n" << diags.render("qmatmul", ir::print_program(program));
    return {};
  }
  return c;
}

void check(const Problem& p, uint32_t seed, bool sanity, bool on_gpu = false) {
  Inputs in = make_inputs(p, seed);
  std::vector<uint8_t> c = run_qmatmul(p, in, on_gpu);
  ASSERT_FALSE(c.empty());
  std::string report;
  EXPECT_EQ(mismatches(c, reference(p, in), p.n, &report), 0) << report;
  if (sanity) {
    // The comparison can fail: against a reference with the other group's scales most elements mismatch.
    EXPECT_GT(mismatches(c, reference(p, in, 1), p.n, nullptr), p.m * p.n / 2);
  }
}

TEST(QMatmulProgram, EveryWeightTypeSmallShape) {
  ASSERT_EQ(weight_types().size(), 37u);  // i1..i8, u1..u8 and the 21 floats of 3 to 8 bits
  for (DataType w : weight_types()) {
    SCOPED_TRACE(w.name());
    QMatmulConfig config;
    config.wtype = w;
    config.group = 32;
    check({5, 24, 64, config}, 1000 + static_cast<uint32_t>(w.bits()), /*sanity=*/true);
  }
}

TEST(QMatmulProgram, EveryWeightTypeRaggedShapeAndLargerBlocks) {
  // M = 17, N = 13: neither a multiple of the tile; two tiles per thread in M and N, two mma k-steps per
  // BK, and one scale per column (G = K).
  for (DataType w : weight_types()) {
    SCOPED_TRACE(w.name());
    QMatmulConfig config;
    config.wtype = w;
    config.group = 64;
    config.block_m = 32;
    config.block_n = 16;
    config.block_k = 32;
    check({17, 13, 64, config}, 2000 + static_cast<uint32_t>(w.bits()), /*sanity=*/false);
  }
}

TEST(QMatmulProgram, DefaultTileRaggedShape) {
  for (DataType w : {DataType::int_(4), DataType::uint(3), DataType::float_(2, 1), DataType::float_(6, 1)}) {
    SCOPED_TRACE(w.name());
    QMatmulConfig config;
    config.wtype = w;
    config.group = 32;
    check({17, 13, 64, config}, 3000, /*sanity=*/true);
  }
}

// The same programs compiled to CUDA (packed sub-byte loads, the generated converters, mma) on the GPU,
// against the same double reference, at a ragged shape with several blocks in both grid dimensions.
TEST(QMatmulGpu, EveryWeightTypeMatchesTheReference) {
  if (!codegen::cuda::gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (DataType w : weight_types()) {
    SCOPED_TRACE(w.name());
    QMatmulConfig config;
    config.wtype = w;
    config.group = 32;
    check({37, 77, 64, config}, 4000 + static_cast<uint32_t>(w.bits()), /*sanity=*/true, /*on_gpu=*/true);
    config.group = 64;
    config.block_m = 32;
    config.block_n = 16;
    config.block_k = 32;
    check({37, 77, 64, config}, 5000 + static_cast<uint32_t>(w.bits()), /*sanity=*/false, /*on_gpu=*/true);
  }
}

TEST(QMatmulProgram, WideFloatsGoThroughF32) {
  EXPECT_TRUE(qmatmul_weight_fits_f16(DataType::int_(8)));
  EXPECT_TRUE(qmatmul_weight_fits_f16(DataType::f8e4m3()));
  EXPECT_TRUE(qmatmul_weight_fits_f16(DataType::f8e5m2()));
  EXPECT_FALSE(qmatmul_weight_fits_f16(DataType::float_(6, 1)));
}

TEST(QMatmulProgram, RejectsBadConfigs) {
  QMatmulConfig c;
  c.wtype = DataType::boolean();
  EXPECT_THROW(build_qmatmul(c), Error);
  c.wtype = DataType::i16();
  EXPECT_THROW(build_qmatmul(c), Error);
  c.wtype = DataType::int_(4);
  c.block_k = 32;
  c.group = 48;
  EXPECT_THROW(build_qmatmul(c), Error);
  c.group = 32;
  c.block_n = 12;
  EXPECT_THROW(build_qmatmul(c), Error);
  c.block_n = 8;
  c.atype = DataType::bf16();
  EXPECT_THROW(build_qmatmul(c), Error);
}

}  // namespace
}  // namespace tilevm::ops
