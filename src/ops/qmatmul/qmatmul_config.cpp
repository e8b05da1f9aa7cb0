// The quantized matmul's problem and configuration: names, validation and the sizes derived from them
// (qmatmul.h). The program builders are in qmatmul.cpp.
#include <algorithm>
#include <cmath>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "qmatmul_shape.h"
#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/support/error.h"
#include "tilevm/support/int_math.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::ops {

std::string QMatmulProblem::key() const {
  return fmt::format("m{}_n{}_k{}_{}_{}_g{}{}", m, n, k, atype.name(), wtype.name(), group,
                     zero_point ? "_z" : "");
}

std::string QMatmulConfig::name() const {
  if (dequant_gemm) return "dequant_gemm";
  const std::string warps = warps_k > 1 ? fmt::format("{}x{}x{}", warps_m, warps_n, warps_k)
                                        : fmt::format("{}x{}", warps_m, warps_n);
  return fmt::format("bm{}_bn{}_bk{}_sk{}_w{}_s{}_k{}{}{}", block_m, block_n, block_k, slice_k, warps, stages,
                     split_k,
                     !wgmma             ? (tma ? "_tma" : "")
                     : register_a       ? "_wsr"
                     : warp_specialized ? "_ws"
                                        : "_wg",
                     stream_k > 0 ? fmt::format("_p{}", stream_k) : "");
}

QMatmulConfig QMatmulConfig::parse(const std::string& name) {
  if (name == "dequant_gemm") return QMatmulConfig{.dequant_gemm = true};
  static const std::regex re(
      R"(bm(\d{1,6})_bn(\d{1,6})_bk(\d{1,6})_sk(\d{1,6})_w(\d{1,6})x(\d{1,6})(?:x(\d{1,6}))?_s(\d{1,6})_k(\d{1,6})(_wg|_wsr|_ws|_tma)?(?:_p(\d{1,6}))?)");
  std::smatch m;
  if (!std::regex_match(name, m, re))
    fail(
        "'{}' is not a qmatmul configuration name (expected e.g. bm16_bn64_bk128_sk64_w1x4_s3_k1 or, with "
        "warps "
        "along K, bm16_bn64_bk512_sk128_w1x2x4_s3_k1, or of the wgmma form "
        "bm64_bn128_bk64_sk64_w1x8_s4_k1_wg (_ws warp-specialized, _wsr with register A, _wsr_p132 "
        "stream-K over 132 blocks; an mma.sync form with TMA copies ..._s4_k4_tma), each number of at most 6 "
        "digits)",
        name);
  auto v = [&](int i) { return std::stoll(m[i].str()); };  // at most 6 digits: never out of range
  QMatmulConfig c;
  c.block_m = v(1);
  c.block_n = v(2);
  c.block_k = v(3);
  c.slice_k = v(4);
  c.warps_m = v(5);
  c.warps_n = v(6);
  c.warps_k = m[7].matched ? v(7) : 1;
  c.stages = v(8);
  c.split_k = v(9);
  c.tma = m[10].str() == "_tma";
  c.wgmma = m[10].matched && !c.tma;
  c.warp_specialized = m[10].str() == "_ws" || m[10].str() == "_wsr";
  c.register_a = m[10].str() == "_wsr";
  c.stream_k = m[11].matched ? v(11) : 0;
  return c;
}

bool qmatmul_weight_fits(DataType wtype, DataType atype) {
  if (wtype == atype) return true;
  if (wtype.is_integer()) return wtype.bits() <= (atype == DataType::f16() ? 11 : 8);
  if (!wtype.is_float() || wtype.bits() > 8) return false;
  for (uint64_t code = 0; code < (uint64_t{1} << wtype.bits()); ++code) {
    const double v = decode(wtype, code);
    if (!std::isfinite(v)) continue;
    if (decode(atype, encode(atype, v)) != v) return false;
  }
  return true;
}

void check_problem(const QMatmulProblem& p) {
  const DataType a = p.atype, w = p.wtype;
  if (a != DataType::f16() && a != DataType::bf16())
    fail("qmatmul: the activation type must be f16 or bf16, got {}", a.name());
  const bool low_bit = !w.is_bool() && w.bits() >= 1 && w.bits() <= 8 && (w.is_integer() || w.is_float());
  if (!low_bit && w != a)
    fail(
        "qmatmul: the weight type must be an integer or float type of 1 to 8 bits, or the activation type "
        "{} itself, got {}",
        a.name(), w.name());
  if (p.m <= 0 || p.n <= 0 || p.k <= 0)
    fail("qmatmul: m, n and k must be positive, got m={} n={} k={}", p.m, p.n, p.k);
  if (p.m > (int64_t{1} << 31) - 1 || p.n > (int64_t{1} << 31) - 1 || p.k > (int64_t{1} << 31) - 1 ||
      p.n * p.k > (int64_t{1} << 40))
    fail("qmatmul: the shape m={} n={} k={} is too large", p.m, p.n, p.k);
  if (p.group != p.k && p.group != 32 && p.group != 64 && p.group != 128)
    fail("qmatmul: the group size must be 32, 64, 128 or k ({}), got {}", p.k, p.group);
  if (p.k % p.group != 0) fail("qmatmul: k ({}) must be a multiple of the group size ({})", p.k, p.group);
  if (p.zero_point && w.kind() != TypeKind::UnsignedInt)
    fail("qmatmul: zero points need an unsigned integer weight type, got {}", w.name());
}

const target::Target& qmatmul_default_target() {
  static const target::Target target = target::Target::h100_sxm();
  return target;
}

void check_config(const QMatmulProblem& p, const QMatmulConfig& c) {
  check_config(p, c, qmatmul_default_target());
}

void check_config(const QMatmulProblem& p, const QMatmulConfig& c, const target::Target& target) {
  check_problem(p);
  if (c.dequant_gemm) return;
  auto bad = [&](const std::string& why) { fail("qmatmul: configuration {} is invalid: {}", c.name(), why); };
  if (c.warps_m < 1 || c.warps_n < 1 || c.warps_k < 1) bad("warps_m, warps_n and warps_k must be at least 1");
  if (c.block_threads() > target.max_threads_per_block)
    bad(fmt::format("{} threads per block, at most {}", c.block_threads(), target.max_threads_per_block));
  if (c.warp_specialized && !c.wgmma) bad("warp specialization is a variant of the wgmma form");
  if (c.register_a && !c.warp_specialized)
    bad("register A (wgmma's RS form) is a variant of the warp-specialized form");
  if (c.tma) {
    // The mma.sync forms with TMA copies (QMatmulConfig::tma).
    if (!target.features.hopper)
      bad(fmt::format("TMA copies (_tma) need sm_90, and the target {} is {}", target.name, target.arch));
    if (c.wgmma)
      bad("TMA copies (_tma) are a variant of the mma.sync forms (the wgmma forms have their own)");
    if (c.warps_k != 1) bad("TMA copies (_tma) need warps_k 1");
    // The codes' tile is one bulk copy (no box); the scale and zero rows [SROWS, BN] are a tensor copy.
    const QMatmulShape s(p, c);
    if (!s.per_channel && c.block_n > 256)
      bad(fmt::format(
          "TMA copies (_tma) copy a stage's scale rows as one box, at most 256 wide: block_n ({})",
          c.block_n));
    if (!s.per_channel && p.n % 8 != 0)
      bad(fmt::format("TMA copies (_tma) need the scales' rows in 16-byte multiples: n ({}) a multiple of 8",
                      p.n));
    if (s.scale_rows * c.block_n * 2 % 128 != 0)
      bad(fmt::format(
          "TMA copies (_tma) write tiles of 128-byte multiples, and a stage's scale rows are {} x {} x 2 "
          "bytes",
          s.scale_rows, c.block_n));
  }
  if (c.wgmma) {
    // One warpgroup per 64 columns of C; the dequantized tile's rows are 64 ATYPE values (128 bytes).
    if (!target.features.wgmma)
      bad(fmt::format("the wgmma form needs wgmma (sm_90a), and the target {} is {}", target.name,
                      target.arch));
    // Three or four consumer warpgroups (BN 192, 256) measured slower on the H200 (docs/performance.md,
    // eleventh session): half as many blocks at 8192 columns, and no faster a step.
    if (c.warps_m != 1 || c.warps_k != 1 || (c.warps_n != 4 && c.warps_n != 8))
      bad("the wgmma form needs warps_m 1, warps_k 1 and warps_n 4 or 8 (one or two warpgroups)");
    if (c.block_n != 16 * c.warps_n)
      bad(fmt::format("the wgmma form needs block_n ({}) equal to 16 * warps_n ({})", c.block_n,
                      16 * c.warps_n));
    if ((c.block_k != 64 && c.block_k != 128 && c.block_k != 256) || c.slice_k != c.block_k)
      bad(fmt::format("the wgmma form needs block_k 64, 128 or 256 and slice_k equal to it (got {} and {})",
                      c.block_k, c.slice_k));
    if (c.block_m < 16 || c.block_m > 256 || c.block_m % 16 != 0)
      bad(fmt::format("the wgmma form needs block_m ({}) a multiple of 16 from 16 to 256", c.block_m));
    if (!qmatmul_weight_fits(p.wtype, p.atype))
      bad(fmt::format("the wgmma form needs weights whose values fit {} ({} takes the f32 path)",
                      p.atype.name(), p.wtype.name()));
    if (c.warp_specialized) {
      // The consumers hold two stages (the one they multiply, and the one before until its product
      // retires): with two, nothing would be fetched ahead.
      if (c.stages < 3)
        bad(fmt::format("the warp-specialized form needs at least 3 stages, got {}", c.stages));
      if (p.k % 8 != 0 || p.n % 8 != 0)
        bad(
            fmt::format("the warp-specialized form copies with the TMA, whose rows are 16-byte multiples: k "
                        "({}) and n ({}) must be multiples of 8",
                        p.k, p.n));
      const QMatmulShape s(p, c);
      if (!c.register_a && s.words_per_thread % 4 != 0)
        bad(
            fmt::format("the warp-specialized form needs each thread's codes of a tile ({} words) a multiple "
                        "of 4 words (the codes' tile is copied as rows of 256 words)",
                        s.words_per_thread));
      // Past 128 rows (the accumulator is block_m / 2 registers a thread, 128 at 256 rows, within the
      // consumers' 240 with no spill since the groups' codes load one group at a time), register A needs two
      // consumer warpgroups: with one, each step's products wait on each other and 256 rows measured 2-5%
      // slower than 128 (the H200, seventeenth session); with two, one warpgroup's products overlap the
      // other's conversions, and the weights are dequantized once per 256 rows (docs/performance.md,
      // nineteenth session: 8192 x 8192 at M = 512).
      if (c.register_a && c.block_m > 128 && c.warps_n != 8)
        bad(fmt::format(
            "register A over block_m {} (more than 128) needs two consumer warpgroups (warps_n 8), "
            "got warps_n {}",
            c.block_m, c.warps_n));
      // Register A: each group's codes are loaded on their own, in whole words.
      const RegisterAGroups& g = s.register_a;
      if (c.register_a && !g.valid)
        bad(
            fmt::format("register A needs each thread's codes of a {}-column group in whole words, at most 8 "
                        "words (a row "
                        "of 256 words a warp: the TMA's widest box); here {} bits a thread of {}",
                        g.group_k, s.words_per_thread * 32 / std::max<int64_t>(1, g.groups), p.wtype.name()));
    }
  } else if (c.swapped()) {
    // block_m == 8: the weights are the mma's A operand (see QMatmulConfig::swapped).
    if (c.warps_m != 1 || c.warps_k != 1) bad("block_m 8 (swapped operands) needs warps_m and warps_k of 1");
    if (c.block_n % (16 * c.warps_n) != 0)
      bad(fmt::format("block_m 8 (swapped operands) needs block_n ({}) a multiple of 16 * warps_n ({})",
                      c.block_n, 16 * c.warps_n));
    if (!qmatmul_weight_fits(p.wtype, p.atype))
      bad(fmt::format(
          "block_m 8 (swapped operands) needs weights whose values fit {} ({} takes the f32 path)",
          p.atype.name(), p.wtype.name()));
  } else if (c.block_m <= 0 || c.block_m % (16 * c.warps_m) != 0) {
    bad(fmt::format("block_m ({}) must be 8 or a positive multiple of 16 * warps_m ({})", c.block_m,
                    16 * c.warps_m));
  }
  if (c.block_n <= 0 || c.block_n % (8 * c.warps_n) != 0)
    bad(fmt::format("block_n ({}) must be a positive multiple of 8 * warps_n ({})", c.block_n,
                    8 * c.warps_n));
  if (c.slice_k <= 0 || c.slice_k % 16 != 0)
    bad(fmt::format("slice_k ({}) must be a multiple of 16", c.slice_k));
  if (c.block_k <= 0 || c.block_k % c.slice_k != 0)
    bad(fmt::format("block_k ({}) must be a multiple of slice_k ({})", c.block_k, c.slice_k));
  if (c.stages < 2) bad(fmt::format("stages ({}) must be at least 2", c.stages));
  if (c.split_k < 1) bad(fmt::format("split_k ({}) must be at least 1", c.split_k));
  if (c.stream_k < 0) bad(fmt::format("stream_k ({}) must not be negative", c.stream_k));
  if (c.stream_k > 0) {
    if (!c.register_a) bad("stream-K (_p) needs the register-A form (_wsr)");
    if (c.split_k != 1)
      bad(fmt::format("stream-K (_p) needs split_k 1, not {}: it splits K itself", c.split_k));
    if (p.zero_point && p.group == p.k)
      bad("stream-K (_p) does not take zero points per channel (a block's tiles change along its run)");
  }
  const QMatmulShape s(p, c);
  if (s.words_per_thread * 32 != s.bits_per_thread)
    bad(fmt::format("each thread's codes of one slice ({} bits) must fill whole 32-bit words",
                    s.bits_per_thread));
  if (!s.per_channel) {
    if (p.group % c.slice_k != 0)
      bad(fmt::format("slice_k ({}) must divide the group size ({})", c.slice_k, p.group));
    if (c.block_k % p.group != 0 && p.group % c.block_k != 0)
      bad(fmt::format("block_k ({}) and the group size ({}) must divide one another", c.block_k, p.group));
  }
  if (c.warps_k > 1) {
    if (!qmatmul_weight_fits(p.wtype, p.atype))
      bad(fmt::format("warps_k > 1 needs weights whose values fit {} ({} takes the f32 path)", p.atype.name(),
                      p.wtype.name()));
    if (!s.per_channel && c.slice_k != p.group)
      bad(fmt::format(
          "warps_k > 1 needs slice_k ({}) equal to the group size ({}): each group of warps scales "
          "its own slices",
          c.slice_k, p.group));
    if (c.block_k % (c.slice_k * c.warps_k) != 0)
      bad(fmt::format("block_k ({}) must be a multiple of slice_k * warps_k ({})", c.block_k,
                      c.slice_k * c.warps_k));
    // The final sum over the warps along K deals the [BM, BN] tile out as runs of BM * BN / threads columns.
    if ((c.block_m * c.block_n) % c.threads() != 0 || c.block_n % (c.block_m * c.block_n / c.threads()) != 0)
      bad(
          fmt::format("block_m * block_n ({}) must be a multiple of the {} threads, and block_n ({}) of the "
                      "columns each thread sums ({})",
                      c.block_m * c.block_n, c.threads(), c.block_n,
                      std::max<int64_t>(1, c.block_m * c.block_n / c.threads())));
  }
  if (s.shared_bytes > target.shared_per_block)
    bad(fmt::format("{} bytes of shared memory, at most {}", s.shared_bytes, target.shared_per_block));
}

RegisterAGroups::RegisterAGroups(const QMatmulConfig& c, int64_t weight_bits, int64_t words_per_thread) {
  group_k = qmatmul_rs_group_k(c, weight_bits);
  groups = c.block_k / group_k;
  wc = groups > 0 ? words_per_thread / groups : 0;
  valid = wc > 0 && wc * groups == words_per_thread && wc <= 8;
}

QMatmulShape::QMatmulShape(const QMatmulProblem& p, const QMatmulConfig& c) {
  per_channel = p.group == p.k;
  bits = p.wtype.bits();
  tm = c.block_m / (16 * std::max<int64_t>(1, c.warps_m));
  tn = c.block_n / (8 * std::max<int64_t>(1, c.warps_n));
  tk = c.slice_k / 16;
  bits_per_thread = 4 * tk * tn * bits;  // an mma B fragment holds 4 elements per thread
  words_per_thread = bits_per_thread / 32;
  slice_words = c.slice_k * c.block_n * bits / 32;
  tile_words = c.block_k * c.block_n * bits / 32;
  if (c.register_a) register_a = RegisterAGroups(c, bits, words_per_thread);
  code_row_words = c.register_a ? 32 * std::max<int64_t>(1, register_a.wc) : 256;
  k_tiles = ceil_div(p.k, c.block_k);
  n_tiles = ceil_div(p.n, c.block_n);
  scale_rows = per_channel ? 0 : std::max<int64_t>(1, c.block_k / p.group);
  const int64_t scale_bytes = scale_rows * c.block_n * 2 * (p.zero_point ? 2 : 1);
  weight_stage_bytes = tile_words * 4 + scale_bytes;
  stage_bytes = c.block_m * c.block_k * 2 + weight_stage_bytes;
  shared_bytes = c.stages * stage_bytes;
  if (c.warps_k > 1) shared_bytes += c.warps_k * c.block_m * c.block_n * 4;  // the partial tiles to sum
  // The wgmma form: two dequantized [BN, BK] tiles, and up to 1024 bytes to align the swizzled tiles.
  // Register A keeps only the alignment.
  if (c.wgmma) shared_bytes += (c.register_a ? 0 : 2 * c.block_n * c.block_k * 2) + 1024;
  // Warp-specialized: two barriers per stage (full and empty), 8 bytes each.
  if (c.warp_specialized) shared_bytes += 16 * c.stages;
  // TMA copies in an mma.sync form: one barrier per stage (full).
  if (c.tma) shared_bytes += ceil_div(8 * c.stages, 128) * 128;  // the planner aligns what follows to 128
}

bool qmatmul_weights_rounded(const QMatmulProblem& p, const QMatmulConfig& c) {
  return c.dequant_gemm || (c.wgmma && p.group != p.k);
}

int64_t qmatmul_shared_bytes(const QMatmulProblem& p, const QMatmulConfig& c) {
  if (c.dequant_gemm) return 0;
  return QMatmulShape(p, c).shared_bytes;
}

int64_t qmatmul_transformed_bytes(const QMatmulProblem& p, const QMatmulConfig& c) {
  if (c.dequant_gemm) return (p.k * p.n * p.wtype.bits() + 31) / 32 * 4;
  const QMatmulShape s(p, c);
  return s.k_tiles * s.n_tiles * s.tile_words * 4;
}

int64_t qmatmul_codes_bytes(const QMatmulProblem& p) {
  return (packed_bytes(p.wtype, p.k * p.n) + 15) / 16 * 16;
}

StreamK stream_k_split(const QMatmulProblem& p, const QMatmulConfig& c) {
  StreamK s;
  if (c.stream_k <= 0) return s;
  s.tiles = ceil_div(p.m, c.block_m) * ceil_div(p.n, c.block_n);
  s.k_tiles = ceil_div(p.k, c.block_k);
  s.iterations = s.tiles * s.k_tiles;
  s.per = ceil_div(s.iterations, std::min(c.stream_k, s.iterations));
  s.blocks = ceil_div(s.iterations, s.per);  // those with work: the grid
  s.slots = std::min(s.blocks, ceil_div(s.k_tiles - 1, s.per) + 1);
  for (int64_t t = 0; t < s.tiles; ++t) {
    // The blocks holding the tile's first and last k-tile, as the program's flush computes them.
    const int64_t parts = ((t + 1) * s.k_tiles - 1) / s.per - t * s.k_tiles / s.per + 1;
    if (parts > 1) s.partials += parts;
  }
  return s;
}

int64_t qmatmul_counter_bytes(const QMatmulProblem& p, const QMatmulConfig& c) {
  if (c.dequant_gemm || (c.split_k == 1 && c.stream_k == 0)) return 0;
  return (ceil_div(p.m, c.block_m) * ceil_div(p.n, c.block_n) * 4 + 15) / 16 * 16;
}

int64_t qmatmul_workspace_bytes(const QMatmulProblem& p, const QMatmulConfig& c) {
  if (c.dequant_gemm) return p.k * p.n * 2;
  if (c.stream_k > 0) return stream_k_split(p, c).slots * p.m * p.n * 4;
  return c.split_k > 1 ? c.split_k * p.m * p.n * 4 : 0;
}

}  // namespace tilevm::ops
