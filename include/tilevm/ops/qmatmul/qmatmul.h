// The quantized matmul: C[M, N] = A[M, K] @ dequant(B)[K, N], one parameterized template for every weight
// type (u1..u8, i1..i8, f<b>e<E>m<M> of 3 to 8 bits, and f16/bf16 unquantized), built with the IR builder.
//
// Data (all row-major):
//   A       ATYPE[m, k]                   ATYPE is f16 or bf16; it is also the type of scales, zeros and C
//   codes   WTYPE[k, n] packed            ops::QuantizedWeight::codes (quantize.h)
//   scales  ATYPE[k / G, n]               group g covers rows g*G .. g*G+G-1 (G == k: per channel)
//   zeros   ATYPE[k / G, n]               only with problem.zero_point (unsigned WTYPE)
//   C       ATYPE[m, n]
//   value   dequant(B)[k, n] = (decode(code) - zero) * scale;  C = round(sum_k A * dequant(B)), f32 sums
//
// The programs (each a VM program: it runs on the interpreter and on the GPU):
//   transform   qmatmul_transform<ceil(k/BK), ceil(n/BN)>(WTYPE* b_ptr, u32* t_ptr, i32 n, i32 k)
//               reorders the packed codes tile by tile, [BK, BN] tiles of B in (k-tile, n-tile) order, so
//               that inside a tile each thread's codes for one Dot are contiguous words: the matmul then
//               copies whole tiles with 16-byte cp.async and each thread loads its words with vector
//               loads. Edge tiles are padded with code 0. Run once per weight (weight preparation).
//   matmul      qmatmul<ceil(m/BM), ceil(n/BN), split_k>(ATYPE* a_ptr, u32* t_ptr, ATYPE* scale_ptr,
//               [ATYPE* zero_ptr,] ATYPE* c_ptr, [f32* p_ptr, i32* count_ptr,] i32 m, i32 n, i32 k)
//               With split_k > 1 the split_k blocks of a tile of C store f32 partial sums [split_k, m, n]
//               (p_ptr, the workspace) and take a ticket from the tile's counter (count_ptr, one i32 per
//               tile of C); the block with the last ticket adds the partials and stores C, in the same
//               launch (docs/language.md, "Extension: tickets"). The counters must be 0 before the first
//               run; each run leaves them at 0.
//   dequantize  dequantize<...>(WTYPE* b_ptr, ATYPE* scale_ptr, [ATYPE* zero_ptr,] ATYPE* w_ptr, i32 n, i32
//   k)
//               the dense ATYPE[k, n] weight, for dequantize-then-GEMM (prefill) and as a reference.
//
// Matmul pipeline per block: A [BM, BK] and the transformed B tile go global -> shared with cp.async,
// `stages` tiles in flight; per Dot slice of slice_k rows: A -> registers (ldmatrix), B words -> registers,
// View as WTYPE in the mma B layout, Cast to ATYPE (vectorized converters), subtract zeros, mma into a
// zeroed f32 tile, then acc += tile * scale (per slice; per channel: once at the end). With warps_k > 1 each
// group of warps takes every warps_k-th slice (a batched Dot, the batch over the groups) and the groups'
// accumulators are summed through shared memory after the loop. Weight types whose
// values do not fit ATYPE (f16 activations with a float of more exponent range than f16) are instead cast
// to f32, scaled per weight and rounded to ATYPE before the mma.
#pragma once

#include <cstdint>
#include <string>

#include "tilevm/ir/program.h"
#include "tilevm/target/target.h"
#include "tilevm/type/data_type.h"

namespace tilevm::ops {

// The revision of the template's generated code: part of every tuning-cache key, so that tuning results of an
// older template (whose fastest configuration may differ) are not reused. Bump it with any change to the
// programs below or to how they are emitted.
inline constexpr int kQMatmulTemplateRevision = 10;  // 10: the warp-specialized form

struct QMatmulProblem {
  int64_t m = 1, n = 0, k = 0;
  DataType atype = DataType::f16();  // f16 or bf16: activations, scales, zeros and output
  DataType wtype = DataType::uint(4);
  int64_t group = 128;  // G in {32, 64, 128} or G == k; k must be a multiple of G
  bool zero_point = false;

  // "m16_n8192_k8192_f16_u4_g128" (+ "_z" with zero points): names the problem in caches and reports.
  std::string key() const;
};

struct QMatmulConfig {
  int64_t block_m = 16;   // rows of C per block: a multiple of 16 * warps_m, or 8 (swapped(), below)
  int64_t block_n = 64;   // columns of C per block: a multiple of 8 * warps_n
  int64_t block_k = 128;  // k per pipeline stage: a multiple of slice_k
  int64_t slice_k = 64;   // k per Dot: a multiple of 16; divides G unless G == k
  int64_t warps_m = 1;
  int64_t warps_n = 4;
  // Warps along K inside a block (decode): each group of warps_m * warps_n warps multiplies its own slices
  // (a batched Dot over the groups) and the groups' partial tiles are summed through shared memory at the
  // end, so that a few columns fill a block without a second launch. > 1 needs slice_k == G (or per channel)
  // and weights that fit ATYPE.
  int64_t warps_k = 1;
  int64_t stages = 3;   // cp.async pipeline depth, >= 2
  int64_t split_k = 1;  // blocks along K per tile of C (> 1: f32 partials, the last block's ticket sums them)
  // Instead of the fused template: every run dequantizes the weight into the workspace (the dequantize
  // program) and multiplies with cuBLAS (prefill, where a dense GEMM is faster). The other fields are unused;
  // the "transformed" weight is a copy of the packed codes.
  bool dequant_gemm = false;
  // The wgmma form (sm_90a, batched decode to prefill): C^T[BN, BM] = W^T[BN, BK] @ A^T with warpgroup MMAs.
  // Each step dequantizes its [BN, BK] weight tile in registers (cast, zero, scale in ATYPE) into a 128-byte
  // swizzled shared tile, and one DotAsync per step multiplies it, as wgmma's A operand, by the [BM, BK]
  // activation tile, its B operand read K-major where cp.async put it; the next tile is dequantized while
  // the tensor cores work. Needs warps_m 1, warps_k 1, warps_n 4 or 8 (one warpgroup per 64 columns of C),
  // block_n 16 * warps_n, block_k = slice_k of 64, 128 or 256 (the tile in 64-wide column groups, each a
  // 128-byte swizzled tile), block_m a multiple of 16 up to 256, weights that fit ATYPE and a group that
  // block_k divides (or per channel). Named with the suffix "_wg".
  bool wgmma = false;
  // The wgmma form with warp specialization (implies wgmma): one more warpgroup, the producer, only issues
  // the TMA copies of each stage (activations, codes, scales, zeros) and hands the stage over on an mbarrier;
  // the warps_n / 4 consumer warpgroups only dequantize and multiply, and hand the stage back on another.
  // No thread computes a copy's addresses and there is no block-wide barrier in the loop. Also needs
  // k and n multiples of 8 (the tensor maps' rows are 16-byte multiples) and each thread's codes of a tile
  // a multiple of 4 words (the codes' tile is copied as rows of 256 words). Named with the suffix "_ws".
  bool warp_specialized = false;
  // The warp-specialized form with the dequantized weights as wgmma's register A operand (the RS form;
  // implies warp_specialized). The consumers convert each stage's tile in groups of 64 (or 32) columns, each
  // straight into the registers of its DotAsync, and convert the next group while that product runs; the
  // step's last product is retired before the loop goes on (docs/language.md, "a in registers"). No
  // dequantized tile in shared memory: no stores, no proxy fence, and no Synchronize a step (the consumers'
  // barrier of BarrierArrive stays). Every width of 1 to 8 bits, and 16-bit weights in groups of 32 (the
  // codes are copied as rows of one warp's words of a group); block_m past 128 with two warpgroups only.
  // Named with the suffix "_wsr".
  bool register_a = false;
  // Stream-K (> 0, with register_a; StreamK below): a grid of at most this many blocks (fewer where equal
  // runs need fewer), each taking an equal run of the tiles' k-tiles laid end to end, so that the SMs stay
  // busy whatever the tile count (80 tiles of 128 columns fill 132 SMs badly whole or halved). A tile that
  // several blocks share is summed from their f32 partials by the last of them (a ticket, as split-K:
  // split_k stays 1). Not with zero points per channel. Named with the suffix "_p<blocks>".
  int64_t stream_k = 0;
  // The mma.sync forms (plain and swapped; sm_90) with each stage's codes, scales and zeros copied by the
  // TMA instead of cp.async: thread 0 arms the stage's barrier and issues one bulk copy of the codes' tile
  // (one run of bytes in the transformed weight) and one tensor copy of the scale (and zero) rows, all
  // STAGES stages in flight; A stays a cp.async (as a TMA box it measured slower: docs/performance.md,
  // twenty-eighth session). The codes' copy addresses leave the computing threads (a sixth of a decode
  // warp's instructions), which on the H200 changed decode times by -14% to +15% (a wash on the best
  // configurations): not in the tuner's space; a configuration to ask for. Needs warps_k 1 and, with scales
  // per group, block_n at most 256 (the rows are one box), n a multiple of 8 (16-byte rows) and a stage's
  // scale rows a multiple of 128 bytes. Named with the suffix "_tma".
  bool tma = false;

  // The threads that compute (the matmul's warps; the transform's block).
  int64_t threads() const { return 32 * warps_m * warps_n * warps_k; }
  // The matmul program's block: the computing threads and, warp-specialized, the producer warpgroup.
  int64_t block_threads() const { return threads() + (warp_specialized ? 128 : 0); }
  // block_m == 8 (decode, M <= 8): the mma's operands are swapped. The weights are its A operand (16 columns
  // of C per m16 tile) and the activations its B operand (the 8 rows of C as n8), so one mma.m16n8k16 takes
  // 256 weights instead of 128 and the slice's scaling works on half as many sums. Needs warps_m == 1,
  // warps_k == 1, block_n a multiple of 16 * warps_n, and weights that fit ATYPE (zero points too).
  bool swapped() const { return block_m == 8 && !wgmma; }
  // "bm16_bn64_bk128_sk64_w1x4_s3_k1", with warps_k > 1 "bm16_bn64_bk512_sk128_w1x2x4_s3_k1", the wgmma
  // form "bm64_bn128_bk64_sk64_w1x8_s4_k1_wg", warp-specialized "..._ws", with register A "..._wsr"
  // (stream-K "..._wsr_p132"), the mma.sync forms with TMA copies "..._tma"; "dequant_gemm" for that mode:
  // names the configuration in caches and reports.
  std::string name() const;
  // Parses name(); @throws tilevm::Error on malformed text.
  static QMatmulConfig parse(const std::string& name);
  bool operator==(const QMatmulConfig&) const = default;
};

// @throws tilevm::Error naming the field and its value when the problem is invalid (atype not f16/bf16,
// wtype not a 1..8-bit integer or float nor the atype itself, zero points on a non-unsigned type, G not in
// {32, 64, 128, k}, k not a multiple of G, non-positive or too large sizes). f16/bf16 weights take scales
// like any other type (ops::quantize makes them all 1).
void check_problem(const QMatmulProblem& problem);
// @throws tilevm::Error when `config` is invalid for `problem` (the rules in QMatmulConfig's comments) or
// exceeds the target's threads or shared memory per block (without a target: the H100 SXM's, 1024 threads
// and 227 KB, qmatmul_default_target()).
void check_config(const QMatmulProblem& problem, const QMatmulConfig& config);
void check_config(const QMatmulProblem& problem, const QMatmulConfig& config, const target::Target& target);
// The target configurations are checked and ranked for without a device: the H100 SXM.
const target::Target& qmatmul_default_target();

// True when every finite value of `wtype` converts exactly to `atype`; the fast dequantization (cast to
// ATYPE, subtract the zero, mma, scale the f32 tile) is used then.
bool qmatmul_weight_fits(DataType wtype, DataType atype);

// True when `config` rounds each dequantized weight to ATYPE before the product (dequant_gemm; the wgmma form
// with scales per group, which it multiplies into the weights): check_qmatmul's weights_rounded.
bool qmatmul_weights_rounded(const QMatmulProblem& problem, const QMatmulConfig& config);

// Shared-memory bytes of the matmul program (the pipeline's stages).
int64_t qmatmul_shared_bytes(const QMatmulProblem& problem, const QMatmulConfig& config);
// Bytes of the transformed weight (t_ptr): ceil(k/BK) * ceil(n/BN) tiles of BK * BN codes.
int64_t qmatmul_transformed_bytes(const QMatmulProblem& problem, const QMatmulConfig& config);
// Bytes of the workspace, scratch for one run: the f32 partial sums of split-K (split_k * m * n * 4), 0 when
// split_k == 1; with stream-K, StreamK::slots * m * n * 4; with dequant_gemm, the dense ATYPE weight (k * n *
// 2).
int64_t qmatmul_workspace_bytes(const QMatmulProblem& problem, const QMatmulConfig& config);
// Stream-K (QMatmulConfig::stream_k): the tiles' k-tiles laid end to end (tile-major, bi fastest) are
// `iterations`, per = ceil(iterations / min(stream_k, iterations)) of them a block, and the grid the
// `blocks` = ceil(iterations / per) that have work. Block b takes [b per, min(iterations, (b + 1) per)), so a
// tile's k-tiles fall to at most `slots` blocks, each of which keeps its partial sums in slot
// b - (tile k_tiles) / per of the workspace. The program computes the same from its m, n and k; the
// workspace holds slots x [m, n] f32. `partials` counts the (block, tile) pairs that store partial sums:
// every block of a tile that more than one block shares (the cost model's traffic).
struct StreamK {
  int64_t tiles = 0, k_tiles = 0, iterations = 0, blocks = 0, per = 0, slots = 0, partials = 0;
};
StreamK stream_k_split(const QMatmulProblem& problem, const QMatmulConfig& config);

// Bytes of the split-K ticket counters (one i32 per tile of C, rounded up to 16 bytes; 0 without split-K):
// state that lives across runs. They must be 0 before the first run, and every run leaves them at 0, so
// counters zeroed once serve every later run of the configuration (on one stream at a time).
int64_t qmatmul_counter_bytes(const QMatmulProblem& problem, const QMatmulConfig& config);
// Bytes a buffer of packed codes (WTYPE[k, n]) must have for the transform: the packed size rounded up to
// 16 bytes, because the transforms read whole words (dequant_gemm's copy reads 32-bit words).
int64_t qmatmul_codes_bytes(const QMatmulProblem& problem);
// The identity of the transformed weight's layout, valid within one process: two configurations (of
// problems that differ at most in M) with the same identity read the same transformed bytes, because their
// transform programs print the same. A weight transformed once then serves both; the Python package keys
// its transformed copies by it. "packed" for dequant_gemm (its transform copies the codes).
std::string qmatmul_layout(const QMatmulProblem& problem, const QMatmulConfig& config);

// The programs described above (unverified; they pass verify_program). @throws as check_problem/check_config.
ir::Program build_qmatmul_transform(const QMatmulProblem& problem, const QMatmulConfig& config);
// The matmul program, built by its form (src/ops/qmatmul/qmatmul_stages.h): the wgmma form, the swapped form
// (block_m 8), warps along K (warps_k > 1) or the plain form.
ir::Program build_qmatmul(const QMatmulProblem& problem, const QMatmulConfig& config);
// dequant_gemm's transform: copies the packed codes, u32 words, into t_ptr
//   qmatmul_copy<...>(u32* b_ptr, u32* t_ptr, i64 words)
ir::Program build_qmatmul_copy(const QMatmulProblem& problem);
ir::Program build_dequantize(const QMatmulProblem& problem);

}  // namespace tilevm::ops
