// What every form of the matmul program shares (qmatmul.h: the plain form, the swapped form of block_m 8,
// and warps along K): the constants, the parameters and global views, the pipeline's shared tiles, the
// copies that fill them, the loop around a form's own step, and the epilogue that stores C.
//
// A form's builder (matmul_plain.cpp, matmul_swapped.cpp, matmul_warps_k.cpp) reads as its program:
//
//   MatmulConstants k(problem, config);            // the builder, BM, BN, BK, SK, G, STAGES, ...
//   ... the form's layouts, named ...
//   MatmulPipeline m(k);                           // parameters, views, k-tile range, shared tiles
//   Tensor acc = ...;
//   m.loop([&](const Scalar& uk) { ... one slice: load A and the codes, convert, mma, scale ... });
//   m.store(acc, layout_o);                        // per-channel scaling, then C (or the split-K partials)
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "qmatmul_layouts.h"
#include "qmatmul_shape.h"
#include "tilevm/ir/builder.h"
#include "tilevm/ops/qmatmul/qmatmul.h"

namespace tilevm::ops {

// The program's constants (check_config first).
struct MatmulConstants {
  MatmulConstants(const QMatmulProblem& problem, const QMatmulConfig& config);

  const QMatmulProblem& p;
  const QMatmulConfig& c;
  QMatmulShape s;
  bool fits;     // the weights' values fit ATYPE: cast, subtract zeros, mma, scale the f32 tile
  bool batched;  // warps along K: rank-3 operands (qmatmul_layouts.h)
  ir::ProgramBuilder pb;
  int64_t BM, BN, BK, SK, G, STAGES, SPLIT;
  int64_t WK;  // 1 unless batched
  int64_t SLICE_WORDS, TILE_WORDS;
  int64_t SROWS;  // 0 per channel
};

// The parameters, global views, k-tile range and shared tiles.
struct MatmulData {
  ir::Pointer c_ptr;
  std::optional<ir::Pointer> p_ptr,
      count_ptr;  // split-K: the f32 partial sums and the tiles' ticket counters
  ir::Scalar m, n;
  ir::Scalar bi, bj, bz;
  ir::Tensor ga, gt, gs;
  std::optional<ir::Tensor> gz;  // with zero points
  ir::Scalar first, count;       // this block's k-tiles: first .. first + count - 1 (stream-K: iterations)
  ir::Scalar k_tiles, tiles_m;   // k-tiles of a tile, and tiles along M
  ir::Scalar per;                // stream-K: the iterations of a block (bi, bj and bz are then 0)
  ir::Scalar iterations;         // stream-K: every tile's k-tiles
  ir::Tensor smem_a, smem_b;
  std::optional<ir::Tensor> smem_s, smem_z;  // per group (not per channel): scales, zeros
  std::optional<ir::Tensor> full;            // TMA copies (QMatmulConfig::tma): each stage's barrier
};

// The data above and the pipeline over it.
class MatmulPipeline : public MatmulData {
 public:
  // Names smem_a_layout, then declares everything up to the shared tiles.
  explicit MatmulPipeline(MatmulConstants& k);

  // Prologue, then the loop over this block's k-tiles: `step(uk)` for each step of a stage (slices
  // uk * WK .. uk * WK + WK - 1), then the refill of the stage just used. cur() is the stage of the step.
  void loop(const std::function<void(const ir::Scalar& uk)>& step);
  const ir::Scalar& cur() const { return cur_; }

  // A of step uk from the current stage, in `layout` ([BM, WK * SK]).
  ir::Tensor load_a(const ir::Scalar& uk, const layout::Layout& layout);
  // The codes of step uk as u32 words, in `layout_bt`.
  ir::Tensor load_codes(const ir::Scalar& uk, const layout::Layout& layout_bt);
  // The codes viewed as WTYPE in `layout_b` and converted to ATYPE (through the pair layouts when the codes
  // are stored in pairs).
  ir::Tensor convert_codes(const ir::Tensor& bt, const layout::Layout& layout_b,
                           const std::optional<PairLayouts>& pairs);
  // The per-column row of slice uk from a stage's [SROWS, BN] shared tile (its group's row, or row 0 when
  // the stage holds a single row), in `rows`.
  ir::Tensor slice_row(const std::string& name, const ir::TensorRef& smem, const layout::Layout& rows,
                       const ir::Scalar& uk);

  // One slice of the fast path into `acc`: `zeros()` (when given) subtracted from the converted codes `bf`
  // (exact: both are integers of at most 8 bits), then the mma. Per channel it accumulates into acc
  // directly (store() scales once); per group into a zeroed tile, then acc = tile * scales() + acc in one
  // fma, so the scale multiplies BM x BN sums instead of every weight. The plain and warps-along-K forms
  // differ only in how they fetch the zero and scale rows.
  void accumulate(const ir::Tensor& acc, const ir::Tensor& a, ir::Tensor bf, const layout::Layout& layout_c,
                  const std::function<ir::Tensor()>& zeros, const std::function<ir::Tensor()>& scales);

  // `result` [BM, BN] f32 in `layout_o`: per channel scaled once here (the fast path), then stored to C
  // (rounded to ATYPE) or, with split-K, to the partials: then the ticket from the tile's counter, and for
  // the last of its SPLIT blocks the sum of the partials into C (by the threads that compute: the consumer
  // region of the warp-specialized form).
  void store(const ir::Tensor& result, const layout::Layout& layout_o);
  // store()'s pieces, which stream-K's flush (matmul_wgmma_ws.cpp) runs for each tile it leaves: per channel
  // (the fast path), `result` times the scales of tile column tile_n; and, after a block stored its partial
  // sums in gp, its ticket from gcount[tile], and for the last of the tile's `parts` blocks the sum of
  // gp[0 .. parts) in order (the same bits every run) into C.
  void scale_per_channel(const ir::Tensor& result, const layout::Layout& layout_o, const ir::Scalar& tile_n);
  void sum_when_last(const ir::Tensor& gp, const ir::Tensor& gc, const ir::Tensor& gcount,
                     const layout::Layout& layout_r, const ir::Scalar& parts, const ir::Scalar& tile,
                     const ir::Scalar& tile_m, const ir::Scalar& tile_n);
  // The layout in which the last block of a tile sums its partials: the [BM, BN] tile over the computing
  // threads, 4 consecutive f32 each (store() says how).
  layout::Layout partials_layout() const;

  MatmulConstants& k;
  ir::ProgramBuilder& pb;

 private:
  void preload(const ir::Scalar& t, const ir::Scalar& stage);
  void preload_tma(const ir::Scalar& t, const ir::Scalar& stage);  // QMatmulConfig::tma: codes, scales, zeros
  ir::Scalar cur_;
};

// The forms, each a whole program (qmatmul.h's build_qmatmul dispatches).
ir::Program build_plain_matmul(const QMatmulProblem& problem, const QMatmulConfig& config);
ir::Program build_swapped_matmul(const QMatmulProblem& problem, const QMatmulConfig& config);
ir::Program build_warps_k_matmul(const QMatmulProblem& problem, const QMatmulConfig& config);
ir::Program build_wgmma_matmul(const QMatmulProblem& problem, const QMatmulConfig& config);
ir::Program build_wgmma_ws_matmul(const QMatmulProblem& problem, const QMatmulConfig& config);

}  // namespace tilevm::ops
