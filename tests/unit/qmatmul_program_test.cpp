// ops::build_qmatmul (include/tilevm/ops/qmatmul/qmatmul.h) for every weight type of 1 to 8 bits on uniformly
// drawn codes (the extremes of every type included), verified and run on the interpreter (and on the GPU
// through run_on_gpu), against the library's double reference and tolerance (ops/qmatmul_reference.h).
#include <gtest/gtest.h>

#include "qmatmul_test_util.h"
#include "sanitized.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "expect_error.h"
#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/exec/gpu_program.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/printer.h"
#include "tilevm/ir/verifier.h"
#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/ops/qmatmul/qmatmul_reference.h"
#include "tilevm/ops/quantize.h"
#include "tilevm/runtime/device.h"
#include "tilevm/support/error.h"
#include "tilevm/transform/lower.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::ops {
namespace {

const DataType kF16 = DataType::f16();

// The weight types the quantized matmul supports: integers and floats of 1 to 8 bits.
std::vector<DataType> weight_types() {
  std::vector<DataType> types;
  for (DataType t : all_data_types()) {
    if (!t.is_bool() && t.bits() <= 8 && (t.is_integer() || t.is_float())) types.push_back(t);
  }
  return types;
}

struct Problem {
  QMatmulProblem problem;
  QMatmulConfig config;
};

// Codes drawn uniformly (every finite code of the type, its extremes included, rather than what quantize()
// would produce), packed as the programs read them, and the same data as a QuantizedWeight for the library
// reference (ops/qmatmul_reference.h).
struct Inputs {
  std::vector<uint16_t> a;            // [m, k] ATYPE codes
  std::vector<uint64_t> b_codes;      // [k, n] codes of wtype, all finite
  std::vector<uint64_t> scale_codes;  // [k / G, n] ATYPE codes, positive
  std::vector<uint64_t> zero_codes;   // [k / G, n] ATYPE codes of integers, with zero points
  std::vector<uint8_t> a_bytes, b_bytes, scale_bytes, zero_bytes;
  QuantizedWeight weight;
};

Inputs make_inputs(const Problem& pr, uint32_t seed) {
  const QMatmulProblem& p = pr.problem;
  const DataType w = p.wtype, at = p.atype;
  std::mt19937 rng(seed);
  Inputs in;
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<uint64_t> a_codes;
  for (int64_t i = 0; i < p.m * p.k; ++i) {
    a_codes.push_back(encode(at, unit(rng)));
    in.a.push_back(static_cast<uint16_t>(a_codes.back()));
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
  // Positive scales in [0.5, 1] / q, so |dequantized weight| <= 1. Where that is below ATYPE's range
  // (f8e6m1's range is wider than f16's) the scale is one of the four smallest subnormals instead, still
  // random so that groups differ.
  std::uniform_real_distribution<double> half_one(0.5, 1.0);
  std::uniform_int_distribution<uint64_t> tiny(1, 4);
  std::uniform_int_distribution<int64_t> zero_dist(0, (int64_t{1} << w.bits()) - 1);
  for (int64_t i = 0; i < (p.k / p.group) * p.n; ++i) {
    uint64_t c = encode(at, half_one(rng) / std::max(q, 1.0));
    if (c <= 4) c = tiny(rng);
    in.scale_codes.push_back(c);
    if (p.zero_point) in.zero_codes.push_back(encode(at, static_cast<double>(zero_dist(rng))));
  }
  in.a_bytes = pack(at, a_codes);
  in.b_bytes = pack(w, in.b_codes);
  in.scale_bytes = pack(at, in.scale_codes);
  if (p.zero_point) in.zero_bytes = pack(at, in.zero_codes);
  in.weight.k = p.k;
  in.weight.n = p.n;
  in.weight.spec = QuantSpec{w, p.group, at, p.zero_point};
  in.weight.codes = in.b_bytes;
  for (uint64_t c : in.scale_codes) in.weight.scales.push_back(static_cast<uint16_t>(c));
  for (uint64_t c : in.zero_codes) in.weight.zeros.push_back(static_cast<uint16_t>(c));
  return in;
}

bool run(const ir::Program& built, interp::Arguments& args, bool on_gpu) {
  Diagnostics diags;
  const std::optional<ir::Program> lowered = transform::lower(built, diags, {.verify_each_pass = true});
  if (!lowered) {
    ADD_FAILURE() << "verify failed:\n" << diags.render(built.name, ir::print_program(built));
    return false;
  }
  const ir::Program& program = *lowered;
  const bool ok = on_gpu ? exec::run_on_gpu(program, args, diags) : interp::run_program(program, args, diags);
  if (!ok) ADD_FAILURE() << "run failed:\n" << diags.render(program.name, ir::print_program(program));
  return ok;
}

// Runs transform and matmul, verified, on the interpreter or the GPU; returns C's bytes (empty on failure,
// with a test failure added). With split-K the partial sums start as NaN and the ticket counters at 0, and
// the counters must be back at 0 after the run.
std::vector<uint8_t> run_qmatmul(const Problem& pr, Inputs& in, bool on_gpu = false) {
  const QMatmulProblem& p = pr.problem;
  auto scalar = [](int64_t v) { return interp::ScalarValue{false, v, 0.0}; };
  std::vector<uint8_t> t(static_cast<size_t>(qmatmul_transformed_bytes(p, pr.config)), 0xa5);
  interp::Arguments targs;
  targs.buffers = {{"b_ptr", &in.b_bytes}, {"t_ptr", &t}};
  targs.scalars = {{"n", scalar(p.n)}, {"k", scalar(p.k)}};
  if (!run(build_qmatmul_transform(p, pr.config), targs, on_gpu)) return {};
  std::vector<uint8_t> c(static_cast<size_t>(p.m * p.n * 2), 0xff);  // NaN: unwritten elements show
  const size_t counter_bytes = static_cast<size_t>(qmatmul_counter_bytes(p, pr.config));
  std::vector<uint8_t> counters(counter_bytes, 0);
  std::vector<uint8_t> partial(static_cast<size_t>(qmatmul_workspace_bytes(p, pr.config)), 0xff);
  interp::Arguments args;
  args.buffers = {{"a_ptr", &in.a_bytes}, {"t_ptr", &t}, {"scale_ptr", &in.scale_bytes}, {"c_ptr", &c}};
  if (counter_bytes > 0) {  // split-K or stream-K
    args.buffers["p_ptr"] = &partial;
    args.buffers["count_ptr"] = &counters;
  }
  if (p.zero_point) args.buffers["zero_ptr"] = &in.zero_bytes;
  args.scalars = {{"m", scalar(p.m)}, {"n", scalar(p.n)}, {"k", scalar(p.k)}};
  if (!run(build_qmatmul(p, pr.config), args, on_gpu)) return {};
  EXPECT_EQ(counters, std::vector<uint8_t>(counter_bytes, 0)) << "a ticket counter was left mid-count";
  return c;
}

// The outputs against the library's double reference and tolerance (ops::check_qmatmul). With `sanity`,
// also against a reference whose scales are those of the next group: most outputs must then mismatch, so the
// comparison can fail.
void check(const Problem& p, uint32_t seed, bool sanity, bool on_gpu = false) {
  Inputs in = make_inputs(p, seed);
  std::vector<uint8_t> c_bytes = run_qmatmul(p, in, on_gpu);
  ASSERT_FALSE(c_bytes.empty());
  const QMatmulProblem& q = p.problem;
  std::vector<uint16_t> c(static_cast<size_t>(q.m * q.n));
  std::memcpy(c.data(), c_bytes.data(), c.size() * 2);
  const QMatmulCheck result =
      check_qmatmul(q, c, qmatmul_reference(q, in.a, in.weight), qmatmul_weights_rounded(q, p.config));
  EXPECT_TRUE(result.passed()) << result.summary();
  const int64_t groups = q.k / q.group;
  if (sanity && groups > 1) {
    QuantizedWeight shifted = in.weight;
    std::rotate(shifted.scales.begin(), shifted.scales.begin() + q.n, shifted.scales.end());
    EXPECT_GT(check_qmatmul(q, c, qmatmul_reference(q, in.a, shifted), qmatmul_weights_rounded(q, p.config))
                  .mismatches,
              q.m * q.n / 2);
  }
}

// A small configuration: 2 warps, 16 x 64 tiles (4 n8 tiles per warp, so that 32 codes of any width fill
// whole words), k slices of 32, 2 stages.
QMatmulConfig small_config() {
  QMatmulConfig c;
  c.block_m = 16;
  c.block_n = 64;
  c.block_k = 32;
  c.slice_k = 32;
  c.warps_m = 1;
  c.warps_n = 2;
  c.stages = 2;
  return c;
}

QMatmulProblem problem(int64_t m, int64_t n, int64_t k, DataType w, int64_t group) {
  return make_problem(m, n, k, w, group);
}

// Warps along K: 2 warps along N times `warps_k` groups along K, one slice of G = 32 rows per group and step.
QMatmulConfig warps_k_config(int64_t warps_k) {
  QMatmulConfig c = small_config();
  c.warps_k = warps_k;
  c.block_k = 32 * warps_k;
  return c;
}

TEST(QMatmulProgram, EveryWeightTypeSmallShape) {
  ASSERT_EQ(weight_types().size(), 37u);  // i1..i8, u1..u8 and the 21 floats of 3 to 8 bits
  for (DataType w : weight_types()) {
    SCOPED_TRACE(w.name());
    check({problem(5, 24, 64, w, 32), small_config()}, 1000 + static_cast<uint32_t>(w.bits()),
          /*sanity=*/true);
  }
}

TEST(QMatmulProgram, SplitKZeroPointsBf16AndPerChannel) {
  QMatmulConfig c = small_config();
  c.split_k = 3;
  c.stages = 3;
  check({problem(17, 13, 128, DataType::int_(4), 32), c}, 2001, true);
  QMatmulProblem z = problem(3, 20, 64, DataType::uint(4), 32);
  z.zero_point = true;
  check({z, small_config()}, 2002, true);
  QMatmulProblem b = problem(3, 20, 64, DataType::uint(3), 64);
  b.atype = DataType::bf16();
  check({b, small_config()}, 2003, true);
  check({problem(3, 20, 96, DataType::f8e4m3(), 96), small_config()}, 2004, false);
  QMatmulProblem h = problem(3, 20, 64, DataType::f16(), 32);
  check({h, small_config()}, 2005, true);
}

// Split-K's sum by the last block covers the whole tile whatever BN is against the threads: wider than 4
// columns a thread (BN 256 over one warp), and not a power of two (BN 192 over three warps).
TEST(QMatmulProgram, SplitKSumCoversWideTiles) {
  for (const char* name : {"bm8_bn256_bk128_sk128_w1x1_s3_k2", "bm16_bn192_bk128_sk64_w1x3_s3_k2",
                           "bm16_bn256_bk128_sk64_w1x1_s3_k2"}) {
    SCOPED_TRACE(name);
    check({problem(name[2] == '8' ? 1 : 16, 384, 512, DataType::uint(4), 128), QMatmulConfig::parse(name)},
          2010, false);
  }
}

// Warps along K (a batched Dot, partial tiles summed through shared memory) for every weight type that fits
// f16, with two steps per stage, zero points (grouped and per channel), split-K on top, and bf16.
TEST(QMatmulProgram, WarpsAlongK) {
  for (DataType w : weight_types()) {
    if (!qmatmul_weight_fits(w, kF16)) continue;
    SCOPED_TRACE(w.name());
    check({problem(5, 24, 256, w, 32), warps_k_config(4)}, 3000 + static_cast<uint32_t>(w.bits()), true);
  }
  QMatmulConfig two_steps = warps_k_config(2);
  two_steps.block_k = 128;
  two_steps.stages = 3;
  check({problem(17, 70, 512, DataType::int_(4), 32), two_steps}, 3101, true);
  QMatmulProblem z = problem(3, 20, 256, DataType::uint(4), 32);
  z.zero_point = true;
  check({z, warps_k_config(2)}, 3102, true);
  QMatmulProblem zc = problem(3, 20, 128, DataType::uint(2), 128);  // per channel: any slice_k
  zc.zero_point = true;
  check({zc, warps_k_config(4)}, 3103, true);
  QMatmulConfig split = warps_k_config(2);
  split.split_k = 2;
  QMatmulProblem b = problem(9, 40, 256, DataType::uint(5), 32);
  b.atype = DataType::bf16();
  check({b, split}, 3104, true);
}

// The wgmma form (sm_90a: dequantized tiles in swizzled shared memory, DotAsync with the weights as A):
// every weight type that fits f16, one and two warpgroups, groups of 64 and 128, zero points grouped and per
// channel, split-K, bf16, ragged M, N and K.
QMatmulConfig wgmma_config(int64_t block_m, int64_t warpgroups, int64_t block_k = 64) {
  return QMatmulConfig::parse(fmt::format("bm{}_bn{}_bk{}_sk{}_w1x{}_s3_k1_wg", block_m, 64 * warpgroups,
                                          block_k, block_k, 4 * warpgroups));
}

TEST(QMatmulProgram, WgmmaForm) {
  for (DataType w : weight_types()) {
    if (!qmatmul_weight_fits(w, kF16)) continue;
    SCOPED_TRACE(w.name());
    check({problem(20, 72, 256, w, 128), wgmma_config(16, 1)}, 4000 + static_cast<uint32_t>(w.bits()), true);
  }
  check({problem(37, 130, 192, DataType::int_(4), 64), wgmma_config(32, 2)}, 4101, true);
  check({problem(21, 70, 512, DataType::uint(4), 128), wgmma_config(16, 1, 128)}, 4105, true);
  check({problem(19, 64, 512, DataType::f8e4m3(), 512), wgmma_config(32, 1, 256)}, 4106, false);
  QMatmulProblem z = problem(9, 64, 256, DataType::uint(4), 64);
  z.zero_point = true;
  check({z, wgmma_config(16, 1)}, 4102, true);
  QMatmulProblem zc = problem(9, 64, 192, DataType::uint(3), 192);  // per channel
  zc.zero_point = true;
  check({zc, wgmma_config(48, 1)}, 4103, false);
  QMatmulConfig split = wgmma_config(16, 2);
  split.split_k = 2;
  QMatmulProblem b = problem(17, 100, 512, DataType::uint(4), 128);
  b.atype = DataType::bf16();
  check({b, split}, 4104, true);
  // 80 rows (a wave-balanced block_m of the space, config_space.cpp), two block rows, the second ragged.
  check({problem(100, 72, 256, DataType::uint(4), 128), wgmma_config(80, 1)}, 4107, true);
}

// The warp-specialized wgmma form (a TMA producer warpgroup, consumers on full/empty barriers): the block_k
// of a width is the smallest of 64, 128, 256 that gives each thread whole 16-byte chunks of codes (256
// columns only per channel, as the wgmma form's slice divides the group).
QMatmulConfig ws_config(int64_t block_m, int64_t warpgroups, int64_t block_k, int64_t stages = 3) {
  return QMatmulConfig::parse(fmt::format("bm{}_bn{}_bk{}_sk{}_w1x{}_s{}_k1_ws", block_m, 64 * warpgroups,
                                          block_k, block_k, 4 * warpgroups, stages));
}
int64_t ws_block_k(DataType w) {
  for (int64_t bk : {64, 128, 256})
    if (bk * w.bits() % 256 == 0) return bk;
  return 0;
}

TEST(QMatmulProgram, WarpSpecializedForm) {
  // The interpreter runs the regions under 7 schedules; under AddressSanitizer (some 12 times slower) every
  // third type is enough.
  const int every = test::under_asan(3, 1);
  int index = 0;
  for (DataType w : weight_types()) {
    if (!qmatmul_weight_fits(w, kF16) || index++ % every != 0) continue;
    SCOPED_TRACE(w.name());
    const int64_t bk = ws_block_k(w);
    const int64_t k = bk == 256 ? 512 : 384;
    check({problem(20, 72, k, w, bk == 256 ? k : 128), ws_config(16, 1, bk)},
          5000 + static_cast<uint32_t>(w.bits()), bk != 256);
  }
  // Two consumer warpgroups, more k-tiles than stages, a last k-tile past k (per channel; the TMA fills the
  // columns past k with zeros), ragged M.
  check({problem(37, 136, 320, DataType::int_(4), 320), ws_config(32, 2, 128, 3)}, 5101, false);
  QMatmulProblem z = problem(9, 64, 384, DataType::uint(4), 64);
  z.zero_point = true;
  check({z, ws_config(16, 1, 64)}, 5102, true);
  QMatmulProblem zc = problem(9, 64, 512, DataType::uint(2), 512);  // per channel
  zc.zero_point = true;
  check({zc, ws_config(48, 1, 128)}, 5103, false);
  QMatmulConfig split = ws_config(16, 2, 64);
  split.split_k = 3;  // 8 k-tiles: 3, 3 and 2 per split
  QMatmulProblem b = problem(17, 128, 512, DataType::uint(4), 128);
  b.atype = DataType::bf16();
  check({b, split}, 5104, true);
  // A split with no k-tile (9 tiles over 4 splits of 3: the last has none; the tuner's verification problem
  // meets this), two consumers with zero points per group, and f16 weights (16-bit codes).
  QMatmulConfig empty_split = ws_config(16, 1, 64);
  empty_split.split_k = 4;
  check({problem(7, 64, 576, DataType::uint(4), 64), empty_split}, 5105, true);
  QMatmulProblem z2 = problem(20, 128, 256, DataType::uint(4), 64);
  z2.zero_point = true;
  check({z2, ws_config(32, 2, 64)}, 5106, true);
  check({problem(9, 64, 256, kF16, 128), ws_config(16, 1, 64)}, 5107, false);
  // A wave-balanced block of 176 rows (config_space.cpp), the second block row ragged (not under the
  // sanitizer: 352 rows of a block are its longest case there, and the other cases cover the same code).
  if (!test::kAddressSanitizer)
    check({problem(200, 72, 256, DataType::uint(4), 128), ws_config(176, 2, 64)}, 5108, true);
}

// Register A (wgmma's RS form, "_wsr"): the warp-specialized form with each column group of the tile (64, or
// 32 at 128 rows over two warpgroups) converted into the registers its DotAsync reads; block_k 64, 128 and
// 256 (one to four groups a step).
QMatmulConfig rs_config(int64_t block_m, int64_t warpgroups, int64_t block_k, int64_t stages = 3) {
  return QMatmulConfig::parse(fmt::format("bm{}_bn{}_bk{}_sk{}_w1x{}_s{}_k1_wsr", block_m, 64 * warpgroups,
                                          block_k, block_k, 4 * warpgroups, stages));
}

// The register-A cases, shared by the interpreter and the GPU tests: every type of 1 to 8 bits that fits f16,
// groups of 64 and of 32 columns (odd widths in 64 at 128 rows), then zero points (per group and per
// channel), split-K with an empty split, bf16, one and two consumers, 128 rows.
std::vector<std::pair<Problem, uint32_t>> register_a_cases() {
  std::vector<std::pair<Problem, uint32_t>> cases;
  for (DataType w : weight_types()) {
    if (!qmatmul_weight_fits(w, kF16)) continue;
    const Problem c{problem(37, 136, 384, w, 128), rs_config(32, 2, 128, 4)};
    // Every width that fits f16 takes the form (a rule that refused one would otherwise drop its case).
    try {
      check_config(c.problem, c.config, target::Target::for_arch("sm_90a"));
    } catch (const Error& e) {
      ADD_FAILURE() << w.name() << ": " << e.what();
      continue;
    }
    cases.push_back({c, 12000 + static_cast<uint32_t>(w.bits() * 16 + static_cast<int>(w.kind()))});
  }
  // 1-bit weights per channel, 256 columns a step (four groups of 64).
  cases.push_back({{problem(20, 136, 512, DataType::uint(1), 512), rs_config(16, 1, 256)}, 12106});
  // 128 rows over two warpgroups: 2-bit weights in groups of 32, 3-bit ones in groups of 64.
  cases.push_back({{problem(130, 136, 384, DataType::uint(2), 128), rs_config(128, 2, 128, 3)}, 12107});
  cases.push_back({{problem(130, 136, 384, DataType::uint(3), 128), rs_config(128, 2, 128, 3)}, 12108});
  // 16-bit weights: 8 words a thread of a group of 32, a whole row of the codes' tile a warp.
  cases.push_back({{problem(130, 136, 256, kF16, 256), rs_config(128, 2, 64, 3)}, 12109});
  QMatmulProblem z = problem(33, 128, 512, DataType::uint(4), 64);
  z.zero_point = true;
  cases.push_back({{z, rs_config(48, 2, 64)}, 12101});
  QMatmulProblem zc = problem(20, 192, 1024, DataType::uint(8), 1024);  // per channel: four groups a step
  zc.zero_point = true;
  cases.push_back({{zc, rs_config(32, 1, 256)}, 12102});
  QMatmulConfig split = rs_config(64, 2, 128, 4);
  split.split_k = 4;  // 9 k-tiles: 3, 3, 3 and none
  cases.push_back({{problem(70, 136, 1152, DataType::int_(4), 128), split}, 12103});
  QMatmulProblem b = problem(70, 256, 512, DataType::uint(4), 128);
  b.atype = DataType::bf16();
  cases.push_back({{b, rs_config(128, 2, 128, 4)}, 12104});
  cases.push_back({{problem(200, 136, 384, DataType::int_(8), 128), rs_config(128, 2, 64, 4)}, 12105});
  // 256 rows over two warpgroups (the weights dequantized once per 256 rows), M ragged; 208 rows (the
  // space's one block row at M = 200), 3-bit weights.
  cases.push_back({{problem(257, 72, 256, DataType::uint(4), 128), rs_config(256, 2, 128, 3)}, 12111});
  cases.push_back({{problem(200, 72, 256, DataType::uint(3), 128), rs_config(208, 2, 128, 3)}, 12112});
  // The space's wave-balanced rows (config_space.cpp): 176, two block rows, the second ragged (124 rows);
  // 192 as stream-K over five blocks (four tiles of three k-tiles).
  cases.push_back({{problem(300, 72, 256, DataType::uint(4), 128), rs_config(176, 2, 128, 3)}, 12122});
  QMatmulConfig balanced_stream = rs_config(192, 2, 128, 3);
  balanced_stream.stream_k = 5;
  cases.push_back({{problem(200, 136, 384, DataType::uint(4), 128), balanced_stream}, 12123});
  // Decode (the space offers the form at every M): one row of a 16-row tile, split three ways; three rows
  // with zero points and one consumer.
  QMatmulConfig decode = rs_config(16, 2, 128, 4);
  decode.split_k = 3;
  cases.push_back({{problem(1, 136, 1152, DataType::uint(4), 128), decode}, 12110});
  QMatmulProblem zd = problem(3, 72, 512, DataType::uint(4), 128);
  zd.zero_point = true;
  cases.push_back({{zd, rs_config(16, 1, 128)}, 12111});
  // Stream-K (_p): two tiles of nine k-tiles over seven blocks (three a tile); a block whose run crosses
  // from one tile to the next, with zero points; scales per channel (every tile whole in one block); more
  // blocks asked for than there are k-tiles; then (from a review) tiles along M, blocks of several whole
  // tiles, one k-tile a tile, one block for everything, scales per channel on shared tiles, and nine blocks
  // on one tile.
  auto stream = [](QMatmulConfig c, int64_t blocks) {
    c.stream_k = blocks;
    return c;
  };
  cases.push_back({{problem(5, 136, 1152, DataType::uint(4), 128), stream(rs_config(16, 2, 128), 7)}, 12112});
  QMatmulProblem zs = problem(33, 200, 512, DataType::uint(4), 64);
  zs.zero_point = true;
  cases.push_back({{zs, stream(rs_config(48, 1, 64, 4), 5)}, 12113});
  cases.push_back(
      {{problem(20, 192, 1024, DataType::int_(8), 1024), stream(rs_config(32, 1, 256), 3)}, 12114});
  cases.push_back({{problem(1, 64, 256, DataType::uint(4), 128), stream(rs_config(16, 1, 128), 200)}, 12115});
  cases.push_back({{problem(40, 256, 384, DataType::uint(4), 128), stream(rs_config(16, 1, 128), 4)}, 12116});
  cases.push_back({{problem(5, 512, 256, DataType::uint(4), 128), stream(rs_config(16, 1, 128), 3)}, 12117});
  cases.push_back({{problem(5, 200, 128, DataType::uint(4), 128), stream(rs_config(16, 1, 128), 3)}, 12118});
  cases.push_back({{problem(7, 136, 512, DataType::uint(4), 128), stream(rs_config(16, 2, 128), 1)}, 12119});
  cases.push_back(
      {{problem(5, 136, 1024, DataType::uint(4), 1024), stream(rs_config(16, 2, 256), 3)}, 12120});
  cases.push_back({{problem(5, 128, 1152, DataType::uint(4), 128), stream(rs_config(16, 2, 128), 9)}, 12121});
  return cases;
}

TEST(QMatmulProgram, RegisterAForm) {
  const std::vector<std::pair<Problem, uint32_t>> cases = register_a_cases();
  const size_t every = test::under_asan<size_t>(5, 1);  // the longest test under the sanitizer
  for (size_t i = 0; i < cases.size(); i += every) {
    const auto& [p, seed] = cases[i];
    SCOPED_TRACE(p.problem.key() + " " + p.config.name());
    check(p, seed, p.problem.group != p.problem.k);
  }
}

// TMA copies in the mma.sync forms (QMatmulConfig::tma, "_tma"): the codes of each stage one bulk copy, the
// scale and zero rows tensor copies, on the stage's barrier, A still a cp.async. Each case has more k-tiles
// per block than stages, so that thread 0 refills stages the block has read (the race checker follows the
// copies). The swapped and plain forms, split-K, zero points per group and per channel, a last k-tile past
// k, groups of 32, bf16, two warps along M, and 3-bit codes (tiles of 1536 words: no power of two).
std::vector<std::pair<Problem, uint32_t>> tma_cases() {
  auto cfg = [](const char* name) { return QMatmulConfig::parse(name); };
  std::vector<std::pair<Problem, uint32_t>> cases;
  cases.push_back(
      {{problem(5, 136, 1024, DataType::uint(4), 128), cfg("bm8_bn64_bk128_sk128_w1x2_s3_k2_tma")}, 12001});
  QMatmulProblem z = problem(3, 128, 1024, DataType::uint(4), 64);
  z.zero_point = true;
  cases.push_back({{z, cfg("bm8_bn64_bk64_sk64_w1x2_s2_k1_tma")}, 12002});
  QMatmulProblem zc = problem(7, 128, 520, DataType::uint(4), 520);  // per channel; k-tile 5 reaches past k
  zc.zero_point = true;
  cases.push_back({{zc, cfg("bm8_bn128_bk128_sk128_w1x4_s3_k1_tma")}, 12003});
  cases.push_back(
      {{problem(17, 128, 1024, DataType::int_(4), 32), cfg("bm16_bn64_bk128_sk32_w1x2_s3_k1_tma")}, 12004});
  QMatmulProblem b = problem(20, 192, 2048, DataType::uint(4), 128);
  b.atype = DataType::bf16();
  cases.push_back({{b, cfg("bm16_bn64_bk256_sk128_w1x2_s2_k3_tma")}, 12005});
  cases.push_back(
      {{problem(40, 64, 1024, DataType::uint(8), 128), cfg("bm32_bn64_bk128_sk128_w2x2_s4_k1_tma")}, 12006});
  cases.push_back(
      {{problem(6, 128, 1536, DataType::uint(3), 128), cfg("bm8_bn128_bk128_sk128_w1x4_s3_k2_tma")}, 12007});
  // A split with no k-tile (4 k-tiles over 3 splits of 2), and k-tiles of half a group with zero points.
  cases.push_back(
      {{problem(2, 64, 512, DataType::uint(4), 128), cfg("bm8_bn64_bk128_sk128_w1x2_s2_k3_tma")}, 12008});
  QMatmulProblem zh = problem(9, 64, 1024, DataType::uint(4), 128);
  zh.zero_point = true;
  cases.push_back({{zh, cfg("bm8_bn64_bk64_sk64_w1x2_s2_k1_tma")}, 12009});
  return cases;
}

TEST(QMatmulProgram, TmaCopiesInTheMmaSyncForms) {
  const std::vector<std::pair<Problem, uint32_t>> cases = tma_cases();
  const size_t every = test::under_asan<size_t>(2, 1);
  for (size_t i = 0; i < cases.size(); i += every) {
    const auto& [p, seed] = cases[i];
    SCOPED_TRACE(p.problem.key() + " " + p.config.name());
    check(p, seed, p.problem.group != p.problem.k);
  }
}

TEST(QMatmulProgram, TmaCopiesRules) {
  const QMatmulConfig c = QMatmulConfig::parse("bm8_bn128_bk128_sk128_w1x4_s4_k4_tma");
  EXPECT_TRUE(c.tma);
  EXPECT_FALSE(c.wgmma);
  EXPECT_EQ(c.name(), "bm8_bn128_bk128_sk128_w1x4_s4_k4_tma");
  EXPECT_EQ(QMatmulConfig::parse(c.name()), c);
  const QMatmulProblem p = problem(1, 256, 1024, DataType::uint(4), 128);
  // One barrier a stage more than the cp.async form, and what follows them aligned to 128 bytes.
  QMatmulConfig plain = c;
  plain.tma = false;
  EXPECT_EQ(qmatmul_shared_bytes(p, c) - qmatmul_shared_bytes(p, plain), 128);
  expect_error([&] { check_config(p, c, target::Target::for_arch("sm_80")); },
               "TMA copies (_tma) need sm_90");
  expect_error([&] { build_qmatmul(problem(1, 250, 1024, DataType::uint(4), 128), c); },
               "n (250) a multiple of 8");
  expect_error(
      [&] {
        build_qmatmul(problem(1, 1024, 1024, DataType::uint(4), 128),
                      QMatmulConfig::parse("bm8_bn512_bk128_sk128_w1x8_s3_k1_tma"));
      },
      "at most 256 wide: block_n (512)");
  expect_error([&] { build_qmatmul(p, QMatmulConfig::parse("bm16_bn64_bk256_sk128_w1x2x2_s3_k1_tma")); },
               "need warps_k 1");
  // A stage's scale row of 32 columns is 64 bytes; the TMA writes 128-byte multiples.
  expect_error([&] { build_qmatmul(p, QMatmulConfig::parse("bm8_bn32_bk128_sk128_w1x1_s3_k1_tma")); },
               "a stage's scale rows are 1 x 32 x 2 bytes");
  QMatmulConfig both = c;
  both.wgmma = true;
  both.block_m = 16;
  both.block_n = 64;
  expect_error([&] { check_config(p, both); }, "TMA copies (_tma) are a variant of the mma.sync forms");
}

// A weight's layout identity (qmatmul_layout) is shared by the configurations that read the same transformed
// bytes, whatever M, and differs between the forms' orders.
TEST(QMatmulProgram, LayoutIdentity) {
  const QMatmulProblem one = problem(1, 256, 1024, DataType::uint(4), 128);
  const QMatmulProblem many = problem(200, 256, 1024, DataType::uint(4), 128);
  const QMatmulConfig swapped = QMatmulConfig::parse("bm8_bn128_bk128_sk128_w1x4_s3_k4");
  QMatmulConfig deeper = swapped;
  deeper.stages = 4;
  deeper.split_k = 2;
  EXPECT_EQ(qmatmul_layout(one, swapped), qmatmul_layout(one, deeper));  // stages and splits move no code
  EXPECT_EQ(qmatmul_layout(one, rs_config(16, 2, 128)), qmatmul_layout(many, rs_config(64, 2, 128)));
  EXPECT_NE(qmatmul_layout(one, swapped), qmatmul_layout(one, rs_config(16, 2, 128)));
  EXPECT_NE(qmatmul_layout(many, rs_config(64, 2, 128)), qmatmul_layout(many, ws_config(64, 2, 128)));
  // At 128 rows over two warpgroups register A converts groups of 32 columns: another order of the codes.
  EXPECT_NE(qmatmul_layout(many, rs_config(64, 2, 128)), qmatmul_layout(many, rs_config(128, 2, 128)));
  EXPECT_EQ(qmatmul_layout(one, QMatmulConfig{.dequant_gemm = true}), "packed");
}

TEST(QMatmulProgram, StreamKRules) {
  QMatmulConfig c = rs_config(64, 2, 128);
  c.stream_k = 132;
  EXPECT_EQ(c.name(), "bm64_bn128_bk128_sk128_w1x8_s3_k1_wsr_p132");
  EXPECT_EQ(QMatmulConfig::parse(c.name()), c);
  const QMatmulProblem p = problem(64, 10240, 8192, DataType::uint(4), 128);
  // 80 tiles of 64 k-tiles over 132 blocks: 39 each, so a tile falls to at most three blocks.
  const StreamK s = stream_k_split(p, c);
  EXPECT_EQ(s.tiles, 80);
  EXPECT_EQ(s.per, 39);
  EXPECT_EQ(s.slots, 3);
  EXPECT_EQ(s.blocks, 132);
  // 18 k-tiles over 7 blocks: runs of 3, so six blocks have work and the grid has six.
  QMatmulConfig seven = rs_config(16, 2, 128);
  seven.stream_k = 7;
  const StreamK few = stream_k_split(problem(5, 136, 1152, DataType::uint(4), 128), seven);
  EXPECT_EQ(few.per, 3);
  EXPECT_EQ(few.blocks, 6);
  EXPECT_EQ(few.slots, 4);  // a bound: 9 k-tiles can meet 4 runs of 3 (here each tile meets exactly 3)
  EXPECT_EQ(qmatmul_workspace_bytes(p, c), 3 * 64 * 10240 * 4);
  EXPECT_EQ(qmatmul_counter_bytes(p, c), 80 * 4);
  QMatmulConfig shared = ws_config(16, 2, 128);
  shared.stream_k = 132;
  expect_error([&] { check_config(p, shared); }, "stream-K (_p) needs the register-A form (_wsr)");
  QMatmulConfig split = c;
  split.split_k = 2;
  expect_error([&] { check_config(p, split); }, "stream-K (_p) needs split_k 1, not 2");
  QMatmulProblem zc = problem(16, 256, 1024, DataType::uint(4), 1024);
  zc.zero_point = true;
  QMatmulConfig per_channel = rs_config(16, 2, 256);
  per_channel.stream_k = 8;
  expect_error([&] { check_config(zc, per_channel); }, "does not take zero points per channel");
}

TEST(QMatmulProgram, RegisterAFormRules) {
  expect_error([&] { build_qmatmul(problem(16, 64, 256, DataType::f16(), 256), rs_config(16, 1, 128)); },
               "register A needs each thread's codes of a 64-column group in whole words, at most 8");
  expect_error([&] { build_qmatmul(problem(16, 64, 256, DataType::uint(4), 128), rs_config(256, 1, 128)); },
               "register A over block_m 256 (more than 128) needs two consumer warpgroups (warps_n 8), got "
               "warps_n 4");
  QMatmulConfig not_ws = wgmma_config(16, 1);
  not_ws.register_a = true;
  expect_error([&] { build_qmatmul(problem(16, 64, 256, DataType::uint(4), 128), not_ws); },
               "register A (wgmma's RS form) is a variant of the warp-specialized form");
  const QMatmulConfig c = rs_config(64, 2, 128);
  EXPECT_EQ(c.name(), "bm64_bn128_bk128_sk128_w1x8_s3_k1_wsr");
  EXPECT_TRUE(c.wgmma && c.warp_specialized && c.register_a);
  EXPECT_EQ(QMatmulConfig::parse(c.name()), c);
  // No dequantized tiles in shared memory: 2 x BN x BK x 2 bytes less than the shared-memory form.
  QMatmulConfig ws = c;
  ws.register_a = false;
  const QMatmulProblem p = problem(64, 256, 512, DataType::uint(4), 128);
  EXPECT_EQ(qmatmul_shared_bytes(p, ws) - qmatmul_shared_bytes(p, c), 2 * 128 * 128 * 2);
}

TEST(QMatmulProgram, WarpSpecializedFormRules) {
  expect_error([&] { build_qmatmul(problem(16, 70, 256, DataType::uint(4), 128), ws_config(16, 1, 64)); },
               "k (256) and n (70) must be multiples of 8");
  expect_error([&] { build_qmatmul(problem(16, 64, 256, DataType::uint(2), 128), ws_config(16, 1, 64)); },
               "each thread's codes of a tile (2 words) a multiple of 4 words");
  expect_error([&] { build_qmatmul(problem(16, 64, 256, DataType::uint(4), 128), ws_config(16, 1, 64, 2)); },
               "the warp-specialized form needs at least 3 stages, got 2");
  QMatmulConfig not_wgmma = small_config();
  not_wgmma.warp_specialized = true;
  expect_error([&] { build_qmatmul(problem(16, 64, 256, DataType::uint(4), 128), not_wgmma); },
               "warp specialization is a variant of the wgmma form");
  const QMatmulConfig c = ws_config(64, 2, 128);
  EXPECT_EQ(c.name(), "bm64_bn128_bk128_sk128_w1x8_s3_k1_ws");
  EXPECT_TRUE(c.wgmma);
  EXPECT_EQ(QMatmulConfig::parse(c.name()), c);
  EXPECT_EQ(c.block_threads(), 384);  // two consumer warpgroups and the producer
  EXPECT_EQ(c.threads(), 256);
}

// The same programs compiled to CUDA (cp.async pipeline, transformed weights, the generated converters,
// mma) on the GPU, against the same double reference, at ragged shapes with several blocks in every grid
// dimension.
// Compiles every program of `cases` on all cores first (the kernel cache then serves the runs below), so
// that the GPU test is not bound by one NVRTC compile after another.
void precompile(const std::vector<Problem>& cases) {
  const std::string arch = runtime::Device::open().arch();
  std::vector<std::future<void>> jobs;
  for (const Problem& c : cases) {
    std::vector<ir::Program> programs = {build_qmatmul_transform(c.problem, c.config),
                                         build_qmatmul(c.problem, c.config)};
    for (ir::Program& p : programs) {
      jobs.push_back(std::async(std::launch::async, [p, arch]() mutable {
        Diagnostics diags;
        if (ir::verify_program(p, diags)) exec::compile_program(p, target::Target::for_arch(arch));
      }));
      if (jobs.size() >= 16) {
        for (auto& j : jobs) j.get();
        jobs.clear();
      }
    }
  }
  for (auto& j : jobs) j.get();
}

// The cases of QMatmulGpu.EveryWeightTypeMatchesTheReference, with their seeds.
std::vector<std::pair<Problem, uint32_t>> every_weight_type_gpu_cases() {
  QMatmulConfig c;  // the default: 4 warps, 3 stages, with split-K
  c.split_k = 2;
  std::vector<std::pair<Problem, uint32_t>> cases;
  for (DataType w : weight_types()) {
    const auto bits = static_cast<uint32_t>(w.bits());
    cases.push_back({{problem(37, 77, 256, w, 32), small_config()}, 4000 + bits});
    cases.push_back({{problem(19, 200, 512, w, 128), c}, 5000 + bits});
    QMatmulProblem b = problem(5, 64, 256, w, 64);
    b.atype = DataType::bf16();
    cases.push_back({{b, c}, 6000 + bits});
  }
  for (DataType w : weight_types())
    if (qmatmul_weight_fits(w, kF16))
      cases.push_back(
          {{problem(21, 77, 512, w, 32), warps_k_config(4)}, 8000 + static_cast<uint32_t>(w.bits())});
  // Swapped operands (block_m 8), with split-K and two row tiles, for every type that fits f16.
  const QMatmulConfig swapped = QMatmulConfig::parse("bm8_bn64_bk128_sk128_w1x2_s3_k2");
  for (DataType w : weight_types())
    if (qmatmul_weight_fits(w, kF16))
      cases.push_back({{problem(11, 77, 512, w, 128), swapped}, 9000 + static_cast<uint32_t>(w.bits())});
  QMatmulProblem z = problem(7, 96, 256, DataType::uint(4), 64);
  z.zero_point = true;
  cases.push_back({{z, QMatmulConfig{}}, 7001});
  // Zero points in the swapped form (split-K, grouped and per channel); slices of 64 for z's groups of 64.
  cases.push_back({{z, QMatmulConfig::parse("bm8_bn64_bk128_sk64_w1x2_s3_k2")}, 7003});
  QMatmulProblem zc = problem(5, 80, 512, DataType::uint(2), 512);
  zc.zero_point = true;
  cases.push_back({{zc, QMatmulConfig::parse("bm8_bn32_bk128_sk128_w1x1_s3_k1")}, 7004});
  cases.push_back({{problem(7, 96, 256, DataType::f16(), 256), QMatmulConfig{}}, 7002});
  return cases;
}

TEST(QMatmulGpu, EveryWeightTypeMatchesTheReference) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  const std::vector<std::pair<Problem, uint32_t>> cases = every_weight_type_gpu_cases();
  std::vector<Problem> problems;
  for (const auto& [p, seed] : cases) problems.push_back(p);
  precompile(problems);
  for (const auto& [p, seed] : cases) {
    SCOPED_TRACE(p.problem.key() + " " + p.config.name());
    check(p, seed, p.problem.wtype != DataType::f16(), true);
  }
}

// The wgmma form on the GPU (sm_90a): every weight type that fits f16, one and two warpgroups, block_m from
// 16 to 256, several blocks along M and N with ragged edges, split-K, zero points, per channel and bf16.
// The cases of QMatmulGpu.WgmmaFormMatchesTheReference, with their seeds.
std::vector<std::pair<Problem, uint32_t>> wgmma_gpu_cases() {
  std::vector<std::pair<Problem, uint32_t>> cases;
  for (DataType w : weight_types())
    if (qmatmul_weight_fits(w, kF16))
      cases.push_back(
          {{problem(37, 200, 512, w, 128), wgmma_config(16, 2)}, 10000 + static_cast<uint32_t>(w.bits())});
  QMatmulConfig split = wgmma_config(64, 1);
  split.split_k = 3;
  cases.push_back({{problem(130, 300, 1024, DataType::uint(4), 64), split}, 10101});
  cases.push_back({{problem(300, 136, 384, DataType::int_(8), 128), wgmma_config(256, 2)}, 10102});
  cases.push_back({{problem(77, 200, 1024, DataType::uint(4), 128), wgmma_config(64, 2, 128)}, 10106});
  cases.push_back({{problem(40, 130, 768, DataType::uint(3), 768), wgmma_config(48, 1, 256)}, 10107});
  QMatmulProblem z = problem(33, 128, 512, DataType::uint(4), 128);
  z.zero_point = true;
  cases.push_back({{z, wgmma_config(48, 2)}, 10103});
  QMatmulProblem zc = problem(20, 192, 320, DataType::uint(2), 320);
  zc.zero_point = true;
  cases.push_back({{zc, wgmma_config(32, 1)}, 10104});
  QMatmulProblem b = problem(70, 256, 512, DataType::uint(4), 128);
  b.atype = DataType::bf16();
  cases.push_back({{b, wgmma_config(128, 2)}, 10105});
  // Warp-specialized: every type that fits f16, then zero points, per channel, split-K, bf16, a ragged last
  // k-tile, 128 and 256 rows.
  for (DataType w : weight_types())
    if (qmatmul_weight_fits(w, kF16)) {
      const int64_t bk = ws_block_k(w);
      // 256 columns of k a step fit shared memory with one warpgroup and three stages.
      const Problem c = bk == 256 ? Problem{problem(37, 200, 1024, w, 1024), ws_config(32, 1, bk, 3)}
                                  : Problem{problem(37, 200, 512, w, 128), ws_config(32, 2, bk, 4)};
      cases.push_back({c, 11000 + static_cast<uint32_t>(w.bits())});
    }
  QMatmulProblem wz = problem(33, 128, 512, DataType::uint(4), 64);
  wz.zero_point = true;
  cases.push_back({{wz, ws_config(48, 2, 64)}, 11101});
  QMatmulProblem wzc = problem(20, 192, 384, DataType::uint(8), 384);
  wzc.zero_point = true;
  cases.push_back({{wzc, ws_config(32, 1, 64)}, 11102});
  QMatmulConfig wsplit = ws_config(64, 2, 128, 4);
  wsplit.split_k = 3;
  cases.push_back({{problem(130, 304, 1152, DataType::uint(4), 128), wsplit}, 11103});
  QMatmulProblem wb = problem(70, 256, 512, DataType::uint(4), 128);
  wb.atype = DataType::bf16();
  cases.push_back({{wb, ws_config(128, 2, 128, 4)}, 11104});
  cases.push_back({{problem(300, 136, 384, DataType::int_(8), 128), ws_config(256, 2, 64, 4)}, 11105});
  for (auto& c : register_a_cases()) cases.push_back(std::move(c));
  for (auto& c : tma_cases()) cases.push_back(std::move(c));
  // TMA copies on every type that fits f16 (the swapped form), at a larger shape.
  for (DataType w : weight_types())
    if (qmatmul_weight_fits(w, kF16))
      cases.push_back(
          {{problem(11, 200, 2048, w, 128), QMatmulConfig::parse("bm8_bn64_bk128_sk128_w1x2_s4_k3_tma")},
           12100 + static_cast<uint32_t>(w.bits())});
  return cases;
}

// Every case of the two GPU tests above builds and verifies here, with no GPU: a case that cannot
// (a configuration invalid for its problem) would otherwise show only on the next GPU run, and stop the
// whole GPU test there (as case 7003 did once: slices of 128 for groups of 64).
TEST(QMatmulProgram, TheGpuTestsCasesBuild) {
  std::vector<std::pair<Problem, uint32_t>> cases = every_weight_type_gpu_cases();
  for (auto& c : wgmma_gpu_cases()) cases.push_back(std::move(c));
  EXPECT_GT(cases.size(), 100u);
  const target::Target sm90a = target::Target::for_arch("sm_90a");
  for (const auto& [p, seed] : cases) {
    SCOPED_TRACE(p.problem.key() + " " + p.config.name());
    EXPECT_NO_THROW(check_config(p.problem, p.config, sm90a));
    try {
      std::vector<ir::Program> programs = {build_qmatmul_transform(p.problem, p.config),
                                           build_qmatmul(p.problem, p.config)};
      for (ir::Program& program : programs) {
        Diagnostics diags;
        EXPECT_TRUE(ir::verify_program(program, diags)) << diags.render(program.name, "");
      }
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST(QMatmulGpu, WgmmaFormMatchesTheReference) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  if (!target::Target::for_arch(runtime::Device::open().arch()).features.wgmma)
    GTEST_SKIP() << "no wgmma (sm_90a) on this device";
  const std::vector<std::pair<Problem, uint32_t>> cases = wgmma_gpu_cases();
  std::vector<Problem> problems;
  for (const auto& [p, seed] : cases) problems.push_back(p);
  precompile(problems);
  for (const auto& [p, seed] : cases) {
    SCOPED_TRACE(p.problem.key() + " " + p.config.name());
    check(p, seed, p.problem.group != p.problem.k, true);
  }
}

// The wgmma form's tiles are written by st.shared and cp.async (the generic proxy) and read by wgmma (the
// async proxy): its barriers begin with fence.proxy.async (without it the H200 read stale tiles). The
// mma.sync form, whose tiles no wgmma reads, has none.
TEST(QMatmulProgram, WgmmaFormFencesTheGenericProxy) {
  const target::Target sm90a = target::Target::for_arch("sm_90a");
  auto emitted = [&](ir::Program built) {
    Diagnostics diags;
    const std::optional<ir::Program> lowered = transform::lower(std::move(built), diags, {.target = sm90a});
    EXPECT_TRUE(lowered) << diags.render("program", "");
    return lowered ? codegen::cuda::emit_cuda(*lowered, {.target = sm90a}).source : std::string();
  };
  const std::string fence = "fence.proxy.async.shared::cta";
  EXPECT_NE(emitted(build_qmatmul(problem(64, 256, 512, DataType::uint(4), 128), wgmma_config(64, 2, 128)))
                .find(fence),
            std::string::npos);
  // The warp-specialized consumers' barrier (a named one) has it too: the TMA writes the activations, but
  // st.shared writes the dequantized tile.
  EXPECT_NE(emitted(build_qmatmul(problem(64, 256, 512, DataType::uint(4), 128), ws_config(64, 2, 128)))
                .find(fence),
            std::string::npos);
  EXPECT_EQ(emitted(build_qmatmul(problem(64, 256, 512, DataType::uint(4), 128), small_config())).find(fence),
            std::string::npos);
}

// With TMA copies the loop's refill is Synchronize(), then thread 0's BarrierArrive: the arrival takes no
// second __syncthreads, so the loop keeps one block barrier a k-tile as in the cp.async form. And 3-bit
// codes (tiles of 1536 words, no power of two) emit their bulk copy's tile test (an internal error before).
TEST(QMatmulProgram, TmaCopiesTakeOneBarrierAStep) {
  const target::Target sm90a = target::Target::for_arch("sm_90a");
  auto emitted = [&](const QMatmulProblem& p, const char* config) {
    Diagnostics diags;
    const std::optional<ir::Program> lowered =
        transform::lower(build_qmatmul(p, QMatmulConfig::parse(config)), diags, {.target = sm90a});
    EXPECT_TRUE(lowered) << diags.render("program", "");
    return lowered ? codegen::cuda::emit_cuda(*lowered, {.target = sm90a}).source : std::string();
  };
  const std::string src =
      emitted(problem(1, 1024, 4096, DataType::uint(4), 128), "bm8_bn128_bk128_sk128_w1x4_s4_k4_tma");
  const std::string merged = "the Synchronize() just before it finished every thread's earlier instructions";
  ASSERT_NE(src.find(merged), std::string::npos);
  // Only the refill in the loop merges; the prologue's arrivals keep their barrier.
  EXPECT_EQ(src.find(merged), src.rfind(merged));
  EXPECT_NE(emitted(problem(6, 128, 1536, DataType::uint(3), 128), "bm8_bn128_bk128_sk128_w1x4_s3_k2_tma")
                .find("one bulk copy of 6144 bytes"),
            std::string::npos);
}

TEST(QMatmulProgram, WideFloatsGoThroughF32) {
  EXPECT_TRUE(qmatmul_weight_fits(DataType::int_(8), kF16));
  EXPECT_TRUE(qmatmul_weight_fits(DataType::f8e4m3(), kF16));
  EXPECT_TRUE(qmatmul_weight_fits(DataType::f8e5m2(), kF16));
  EXPECT_FALSE(qmatmul_weight_fits(DataType::float_(6, 1), kF16));
  EXPECT_TRUE(qmatmul_weight_fits(DataType::float_(6, 1), DataType::bf16()));
  EXPECT_TRUE(qmatmul_weight_fits(DataType::uint(8), DataType::bf16()));
}

TEST(QMatmulProgram, RejectsBadProblemsAndConfigs) {
  QMatmulProblem p = problem(1, 64, 128, DataType::boolean(), 32);
  expect_error([&] { check_problem(p); }, "or the activation type f16 itself, got bool");
  p.wtype = DataType::i16();
  expect_error([&] { check_problem(p); }, "or the activation type f16 itself, got i16");
  p.wtype = DataType::int_(4);
  p.group = 48;
  expect_error([&] { check_problem(p); }, "the group size must be 32, 64, 128 or k (128), got 48");
  p.group = 32;
  p.zero_point = true;
  expect_error([&] { check_problem(p); }, "zero points need an unsigned integer weight type, got i4");
  p.zero_point = false;
  QMatmulConfig c;
  c.block_n = 12;
  expect_error([&] { build_qmatmul(p, c); }, "block_n (12) must be a positive multiple of 8 * warps_n (32)");
  c = QMatmulConfig{};
  c.slice_k = 64;  // does not divide G = 32
  expect_error([&] { build_qmatmul(p, c); }, "slice_k (64) must divide the group size (32)");
  EXPECT_EQ(QMatmulConfig::parse(c.name()), c);
  expect_error([&] { QMatmulConfig::parse("bm16"); }, "'bm16' is not a qmatmul configuration name");
  // Warps along K: named with a third warp count; slice_k must equal G; weights must fit ATYPE.
  const QMatmulConfig wk = QMatmulConfig::parse("bm16_bn64_bk128_sk32_w1x2x4_s3_k1");
  EXPECT_EQ(wk.warps_k, 4);
  EXPECT_EQ(wk.threads(), 256);
  EXPECT_EQ(wk.name(), "bm16_bn64_bk128_sk32_w1x2x4_s3_k1");
  EXPECT_EQ(QMatmulConfig::parse("bm16_bn64_bk128_sk32_w1x2_s3_k1").warps_k, 1);
  EXPECT_NO_THROW(build_qmatmul(p, wk));
  QMatmulProblem g64 = p;
  g64.group = 64;
  g64.k = 256;
  expect_error([&] { build_qmatmul(g64, wk); }, "slice_k (32) equal to the group size (64)");
  QMatmulProblem wide = p;
  wide.wtype = DataType::float_(6, 1);
  expect_error([&] { build_qmatmul(wide, wk); }, "warps_k > 1 needs weights whose values fit f16");
  // Swapped operands (block_m 8): one row of warps, no warps along K, 16-column pieces, weights that fit,
  // no zero points.
  EXPECT_NO_THROW(build_qmatmul(p, QMatmulConfig::parse("bm8_bn64_bk64_sk32_w1x2_s3_k1")));
  const auto build = [](const QMatmulProblem& problem, const char* name) {
    return [&problem, name] { build_qmatmul(problem, QMatmulConfig::parse(name)); };
  };
  expect_error(build(p, "bm8_bn64_bk64_sk32_w2x2_s3_k1"), "needs warps_m and warps_k of 1");
  expect_error(build(p, "bm8_bn64_bk128_sk32_w1x2x4_s3_k1"), "needs warps_m and warps_k of 1");
  expect_error(build(p, "bm8_bn24_bk64_sk32_w1x3_s3_k1"), "block_n (24) a multiple of 16 * warps_n (48)");
  expect_error(build(wide, "bm8_bn64_bk64_sk32_w1x2_s3_k1"), "needs weights whose values fit f16");
  QMatmulProblem zp = problem(1, 64, 128, DataType::uint(4), 32);
  zp.zero_point = true;
  EXPECT_NO_THROW(build(zp, "bm8_bn64_bk64_sk32_w1x2_s3_k1")());  // zero points in the swapped form
  expect_error(build(p, "bm24_bn64_bk64_sk32_w1x2_s3_k1"), "block_m (24) must be 8 or a positive multiple");
  // A number too long for int64 is a tilevm::Error too, not std::out_of_range.
  expect_error([&] { QMatmulConfig::parse("bm16_bn64_bk128_sk64_w1x4_s3_k123456789012345678901"); },
               "_k123456789012345678901' is not a qmatmul configuration name");
  EXPECT_EQ(qmatmul_codes_bytes(make_problem(1, 5, 96, DataType::uint(3), 32)), 192);  // 180 rounded to 16
}

}  // namespace
}  // namespace tilevm::ops
