// The declared configuration space of the quantized matmul (config_space.h has the rules and why).
#include "tilevm/ops/qmatmul/config_space.h"

#include "tilevm/ops/qmatmul/cost_model.h"
#include "tilevm/support/int_math.h"

#include <algorithm>
#include <bit>
#include <cstdint>

#include "tilevm/support/error.h"

namespace tilevm::ops {

namespace {

int64_t ceil_pow2(int64_t x) {
  return static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(x, 1))));
}

// Appends `c` where check_config accepts it (the callers' rules are coarse on purpose).
void add_if_valid(const QMatmulProblem& p, const target::Target& target, const QMatmulConfig& c,
                  std::vector<QMatmulConfig>& out) {
  try {
    check_config(p, c, target);
  } catch (const Error&) {
    return;
  }
  out.push_back(c);
}

// Every split_k up to max_split (powers of two, and with `three` also 3) that keeps two k-tiles per split
// (split 1 too, with `two_tiles`: a stage longer than K only pads it with zeros) and at most 512 blocks, and
// that check_config accepts (e.g. not too much shared memory: the rules of the callers are coarse on
// purpose).
void add_splits(const QMatmulProblem& p, const target::Target& target, QMatmulConfig c, int64_t max_split,
                bool two_tiles, std::vector<QMatmulConfig>& out, bool three = false) {
  const int64_t tiles = ceil_div(p.m, c.block_m) * ceil_div(p.n, c.block_n);
  const int64_t k_tiles = ceil_div(p.k, c.block_k);
  for (int64_t split : {1, 2, 3, 4, 8, 16}) {
    if (split > max_split || (split == 3 && !three)) continue;
    if ((split > 1 || two_tiles) && k_tiles < 2 * split) continue;
    if (split > 1 && tiles * split > 512) continue;
    c.split_k = split;
    add_if_valid(p, target, c, out);
  }
}

// Stream-K (QMatmulConfig::stream_k) of a register-A configuration: one block per SM, as these forms run,
// where the tiles fill the SMs unevenly and each block would still take a few k-tiles. Not past 8 waves of
// tiles: the last wave's loss is small there, and the workspace (slots x M x N f32) grows with M (at M =
// 4096 on 8192 x 57344 it would take GBs).
void add_stream_k(const QMatmulProblem& p, const target::Target& target, QMatmulConfig c,
                  std::vector<QMatmulConfig>& out) {
  const int64_t tiles = ceil_div(p.m, c.block_m) * ceil_div(p.n, c.block_n);
  const int64_t sms = target.sm_count;
  if (tiles % sms == 0 || tiles > 8 * sms || tiles * ceil_div(p.k, c.block_k) < 4 * sms) return;
  c.split_k = 1;
  c.stream_k = sms;
  add_if_valid(p, target, c, out);
}

// The k-side choices for one (block_m, block_n, warps): every block_k, stages and split_k the rules allow.
void add_k_choices(const QMatmulProblem& p, const target::Target& target, QMatmulConfig c,
                   std::vector<QMatmulConfig>& out) {
  const int64_t bk_top = std::max<int64_t>(64, ceil_pow2(p.k));
  const int64_t base_slice = (p.group == p.k || p.group % 64 == 0) ? 64 : 32;
  // Slices of 128 where the group and block_k allow: a slice pays a fixed overhead (the A fragments, the
  // scale, the loop), and on the H100 4-bit decode ran 20% faster with 128 than with 64 (35.8 us against
  // 45 us at 16 x 8192 x 8192, bm16_bn256_bk128_w1x8_s4_k8, docs/performance.md).
  const bool slice_128 = p.group == p.k || p.group % 128 == 0;
  for (int64_t bk = 64; bk <= std::min<int64_t>(256, bk_top); bk *= 2) {
    c.slice_k = slice_128 && bk >= 128 ? 128 : base_slice;
    c.block_k = bk;
    for (int64_t stages = 2; stages <= 5; ++stages) {
      if (stages * bk < 256 || stages * bk > 768) continue;
      c.stages = stages;
      add_splits(p, target, c, 16, false, out);
    }
  }
}

// The slice of the forms whose slice is one group: the group, or 128 per channel.
int64_t group_slice(const QMatmulProblem& p) {
  return p.group == p.k ? 128 : p.group;
}

// Warps along K (decode, few rows): slices of G rows (128 per channel), one per group of warps and step,
// 2 to 8 groups, 3 or 4 stages, split-K 1 or 2. A narrow block then streams all of K with as many warps as
// a wide one, and one launch does it (split-K's partial sums cost a second launch and their bytes).
void add_warps_k_choices(const QMatmulProblem& p, const target::Target& target, QMatmulConfig c,
                         std::vector<QMatmulConfig>& out) {
  c.slice_k = group_slice(p);
  for (int64_t wk = 2; wk <= 8; wk *= 2) {
    if (c.warps_m * c.warps_n * wk > 8) continue;
    c.warps_k = wk;
    c.block_k = c.slice_k * wk;
    for (int64_t stages = 3; stages <= 4; ++stages) {
      c.stages = stages;
      add_splits(p, target, c, 2, true, out);
    }
  }
}

// Blocks of one warp (32 columns, no warps along K) where they would be more than four to an SM: on the H100
// they measured 1.4 to 1.7 x the time of wider blocks on 8192 x 57344 at M = 1 to 16 (141.1 against 100.3 us
// at M = 1; 167.7 against 99.9 at M = 16), and the cost model, which rates them close to the wide ones,
// picked them there (docs/performance.md, fifteenth session). Where they are few (8192 columns: 256 blocks)
// they stay: with warps along K they won at M = 16.
bool one_warp_too_many(const QMatmulProblem& p, const target::Target& target) {
  return ceil_div(p.n, 32) > 4 * static_cast<int64_t>(target.sm_count);
}

// The block_m (a multiple of 16 up to 256) whose tiles fill the SMs best with block_n columns: the least
// time on the busiest SM, waves x (block_m + knee) with one block an SM (as the wgmma forms run), the larger
// on a tie. It counts the rows padded past M too; the knee is register A's (QMatmulCalibration::
// rs_rows_knee: a block of N rows takes time as N + knee), without which thin blocks would win on rows alone.
// 80 column tiles (8192 x 10240 with 128 columns) at M = 512 take 176: three block rows, 240 tiles in two
// waves (2 x 242), where 256 rows run two waves (2 x 322) and 128 three (3 x 194); on the H200 123.9 us
// against 172.0 and 151.6 (docs/performance.md, twentieth session).
int64_t wave_balanced_block_m(const QMatmulProblem& p, int64_t block_n, int64_t sms) {
  const int64_t tiles_n = ceil_div(p.n, block_n);
  const double knee = QMatmulCalibration{}.rs_rows_knee;
  int64_t best = 256;
  double best_cost = -1;
  for (int64_t bm = 256; bm >= 16; bm -= 16) {
    const double cost =
        static_cast<double>(ceil_div(ceil_div(p.m, bm) * tiles_n, sms)) * (static_cast<double>(bm) + knee);
    if (best_cost < 0 || cost < best_cost) {
      best = bm;
      best_cost = cost;
    }
  }
  return best;
}

}  // namespace

std::vector<QMatmulConfig> qmatmul_config_space(const QMatmulProblem& problem,
                                                const ConfigSpaceOptions& options) {
  check_problem(problem);
  const QMatmulProblem& p = problem;
  const target::Target& target = options.target ? *options.target : qmatmul_default_target();
  const int64_t P = std::clamp<int64_t>(ceil_pow2(p.m), 16, 128);
  std::vector<int64_t> block_ms;
  if (P == 128) block_ms.push_back(64);
  block_ms.push_back(P);
  const int64_t bn_top = std::min<int64_t>(256, std::max<int64_t>(32, ceil_pow2(p.n)));

  std::vector<QMatmulConfig> space;
  for (int64_t bm : block_ms) {
    std::vector<int64_t> pieces_m = bm <= 32 ? std::vector<int64_t>{bm} : std::vector<int64_t>{32, 64};
    for (int64_t piece_m : pieces_m) {
      for (int64_t bn = 32; bn <= bn_top; bn *= 2) {
        for (int64_t piece_n : {16, 32, 64}) {
          if (bn % piece_n != 0 || (piece_n == 16 && bn != 32)) continue;
          if (bm >= 64 && piece_n < 32) continue;
          const int64_t warps = (bm / piece_m) * (bn / piece_n);
          if (warps < (bn == 32 ? 1 : 2) || warps > 8) continue;
          QMatmulConfig c;
          c.block_m = bm;
          c.block_n = bn;
          c.warps_m = bm / piece_m;
          c.warps_n = bn / piece_n;
          if (warps > 1 || !one_warp_too_many(p, target)) add_k_choices(p, target, c, space);
          if (bm <= 32 && warps <= 4) add_warps_k_choices(p, target, c, space);
        }
      }
    }
  }
  // M <= 8: the swapped operands (block_m 8, QMatmulConfig::swapped): warps of 32 columns, one stage of
  // one slice (128, or the group), 3 or 4 stages, every split. A narrow corner of the space on purpose: it
  // doubles the space otherwise, and the loop's cost per slice is what the swap changes. check_config (in
  // add_splits) drops these where the swap does not apply (the f32 path).
  if (p.m <= 8) {
    for (int64_t bn = 32; bn <= bn_top; bn *= 2) {
      if (bn == 32 && one_warp_too_many(p, target)) continue;
      QMatmulConfig c;
      c.block_m = 8;
      c.block_n = bn;
      c.warps_m = 1;
      c.warps_n = bn / 32;
      c.slice_k = group_slice(p);
      c.block_k = c.slice_k;
      for (int64_t stages = 3; stages <= 4; ++stages) {
        c.stages = stages;
        add_splits(p, target, c, 16, false, space);
      }
    }
  }
  // The wgmma form (sm_90a, every M): one block row of up to 256 tokens (a multiple of 16), and where that
  // passes 128 also 128 (at M = 256 two block rows fill twice the SMs: the H200's tuned 8192 x 8192 went
  // from 65.4 us, bm256 _ws, to 61.7, bm128 _wsr; at M = 512 bm256 _wsr took 96.4 against 109.0 for bm128,
  // docs/performance.md, nineteenth session), and above M = 128 the block_m whose tiles fill the SMs' waves
  // best (wave_balanced_block_m: 176 rows on 8192 x 10240 at M = 512); one or two warpgroups, 64 or 128
  // columns of K a step (256 per channel), 3 or 4 stages, every split, with and without warp specialization,
  // and warp-specialized with register A. Split-K also in 3: one block per SM leaves these forms at the mercy
  // of wave quantization, and 80 tiles (8192 x 10240 at M = 64) fill 132 SMs best three ways (the H200: 40.3
  // us against 45.6 unsplit and 50.5 in two; on six other layers 3 never won, and the model did not pick it
  // there). Register A also as stream-K, which fills the SMs whatever the tile count: on the H200 at M = 32
  // to 128 it took 0.87 to 0.99 of the best of splits 1 to 3 on 14336 x 4096, 4096 x 4096 and 8192 x 57344,
  // but 1.04 to 1.16 on 8192 x 8192 and 28672 x 8192, where two splits of 64 tiles fill 128 SMs
  // (docs/performance.md, fifteenth session); the model ranks it with the splits and timing decides. Neither
  // split 3 nor stream-K below M = 32: there the model, which rates register A too well at decode, took bm16
  // _wsr in three over the mma.sync forms, which measured faster (the H200 at 8192 x 10240: 30.9 us
  // against 23.1 at M = 1, 31.2 against 27.1 at M = 16). check_config drops what does not apply (zero points
  // are fine; the f32 path and groups below block_k are not).
  if (target.features.wgmma) {
    const int64_t rows = std::min<int64_t>(256, (p.m + 15) / 16 * 16);
    for (int64_t wg = 1; wg <= 2; ++wg) {
      std::vector<int64_t> wgmma_block_ms{rows};
      if (rows > 128) wgmma_block_ms.push_back(128);
      if (const int64_t balanced = wave_balanced_block_m(p, 64 * wg, target.sm_count);
          p.m > 128 &&
          std::find(wgmma_block_ms.begin(), wgmma_block_ms.end(), balanced) == wgmma_block_ms.end())
        wgmma_block_ms.push_back(balanced);
      for (int64_t bm : wgmma_block_ms)
        for (int64_t bk : {64, 128, 256}) {
          QMatmulConfig c;
          c.wgmma = true;
          c.block_m = bm;
          c.block_n = 64 * wg;
          c.warps_m = 1;
          c.warps_n = 4 * wg;
          c.block_k = c.slice_k = bk;
          if (bk == 256 && p.group != p.k) continue;
          for (int64_t stages = 3; stages <= 4; ++stages) {
            c.stages = stages;
            // Each also warp-specialized (a producer warpgroup with the TMA), and that with register A, where
            // their rules allow.
            for (int form = 0; form < 3; ++form) {
              c.warp_specialized = form > 0;
              c.register_a = form == 2;
              // Register A over more than 128 rows unsplit: its splits measured 1.05 to 1.46 x the time
              // of bm128 unsplit or stream-K on three layers at M = 256 (the H200: 77.9 against 53.3 us on
              // 8192 x 8192, split 2; docs/performance.md, twentieth session), where the model rated them
              // faster. Stream-K over such blocks stays (239.3 us at M = 1024 on 8192 x 10240, the best).
              add_splits(p, target, c, c.register_a && bm > 128 ? 1 : 16, false, space, /*three=*/p.m >= 32);
              if (c.register_a && p.m >= 32) add_stream_k(p, target, c, space);
            }
          }
        }
    }
  }
  if (options.dequant_gemm) space.push_back(QMatmulConfig{.dequant_gemm = true});
  return space;
}

}  // namespace tilevm::ops
