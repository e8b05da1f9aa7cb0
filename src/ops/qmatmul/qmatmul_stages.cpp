// The stages every form of the matmul program shares (qmatmul_stages.h).
#include "qmatmul_stages.h"

#include "tilevm/support/error.h"

namespace tilevm::ops {

namespace {

using layout::Layout;

QMatmulShape checked_shape(const QMatmulProblem& p, const QMatmulConfig& c) {
  check_config(p, c);
  if (c.dequant_gemm)
    fail("qmatmul: the dequant_gemm configuration has no qmatmul program (it runs dequantize, then cuBLAS)");
  return QMatmulShape(p, c);
}

MatmulData declare(MatmulConstants& k) {
  using namespace ir;
  ProgramBuilder& pb = k.pb;
  const QMatmulProblem& p = k.p;
  const DataType at = p.atype, f32 = DataType::f32(), u32 = DataType::uint(32), i32 = DataType::i32();
  const Layout smem_a_layout = pb.named_layout("smem_a_layout", shared_a_layout(k.c, k.s.bits));
  Pointer a_ptr = pb.pointer_param("a_ptr", at);
  Pointer t_ptr = pb.pointer_param("t_ptr", u32);
  Pointer scale_ptr = pb.pointer_param("scale_ptr", at);
  std::optional<Pointer> zero_ptr;
  if (p.zero_point) zero_ptr = pb.pointer_param("zero_ptr", at);
  Pointer c_ptr = pb.pointer_param("c_ptr", at);
  std::optional<Pointer> p_ptr, count_ptr;
  if (k.c.split_k > 1 || k.c.stream_k > 0) {
    p_ptr = pb.pointer_param("p_ptr", f32);
    count_ptr = pb.pointer_param("count_ptr", i32);
  }
  Scalar m = pb.scalar_param("m", i32), n = pb.scalar_param("n", i32), k_size = pb.scalar_param("k", i32);
  // Stream-K (StreamK in qmatmul.h, the same sums): a row of blocks over the tiles' k-tiles end to end, as
  // many as have work (ceil(iterations / per)).
  const bool stream = k.c.stream_k > 0;
  const Scalar iterations = ceil_div(m, k.BM) * ceil_div(n, k.BN) * ceil_div(k_size, k.BK);
  if (stream)
    pb.grid({ceil_div(iterations, ceil_div(iterations, min(Scalar(k.c.stream_k), iterations)))});
  else
    pb.grid({ceil_div(m, k.BM), ceil_div(n, k.BN), k.SPLIT});
  pb.threads(static_cast<int>(k.c.block_threads()));

  Scalar bi = Scalar(0), bj = Scalar(0), bz = Scalar(0), b = Scalar(0);
  if (stream) {
    b = pb.block_indices("b")[0];
  } else {
    const auto indices = pb.block_indices("bi", "bj", "bz");
    bi = indices[0];
    bj = indices[1];
    bz = indices[2];
  }
  Tensor ga = pb.view_global("ga", a_ptr, at, {m, k_size});
  // Warp-specialized, the TMA copies a tile's codes as rows of code_row_words (a box is at most 256 wide):
  // the same memory as [k tiles, n tiles, TILE_WORDS], viewed as rows.
  const int64_t row = k.s.code_row_words, code_rows = k.c.warp_specialized ? k.s.tile_words / row : 0;
  // With TMA copies in an mma.sync form, the same memory as a tiled global of [TILE_WORDS] tiles, tile
  // kt * n_tiles + bj being one run of bytes that a bulk copy moves as it lies.
  Tensor gt =
      k.c.warp_specialized
          ? pb.view_global("gt", t_ptr, u32, {ceil_div(k_size, k.BK) * ceil_div(n, k.BN) * code_rows, row})
      : k.c.tma
          ? pb.view_global("gt", t_ptr, u32, {ceil_div(k_size, k.BK) * ceil_div(n, k.BN) * k.TILE_WORDS},
                           layout::local(k.TILE_WORDS))
          : pb.view_global("gt", t_ptr, u32, {ceil_div(k_size, k.BK), ceil_div(n, k.BN), k.TILE_WORDS});
  Tensor gs = pb.view_global("gs", scale_ptr, at, {k_size / k.G, n});
  std::optional<Tensor> gz;
  if (zero_ptr) gz = pb.view_global("gz", *zero_ptr, at, {k_size / k.G, n});
  // This block's k-tiles: split z takes tiles [z * per, min(k_tiles, (z + 1) * per)); with stream-K block b
  // takes iterations [b * per, min(iterations, (b + 1) * per)).
  Scalar k_tiles = pb.let("k_tiles", ceil_div(k_size, k.BK));
  Scalar tiles_m = stream ? pb.let("tiles_m", ceil_div(m, k.BM)) : ceil_div(m, k.BM);
  Scalar per, first, count, total = iterations;
  if (stream) {
    total = pb.let("iterations", tiles_m * ceil_div(n, k.BN) * k_tiles);
    per = pb.let("per", ceil_div(total, min(Scalar(k.c.stream_k), total)));
    first = pb.let("first", b * per);
    count = pb.let("count", max(0, min(total - first, per)));
  } else {
    per = pb.let("per", ceil_div(k_tiles, k.SPLIT));
    first = pb.let("first", bz * per);
    count = pb.let("count", max(0, min(k_tiles - first, per)));
  }

  Tensor smem_a = pb.allocate_shared("smem_a", at, smem_a_layout);
  Tensor smem_b = k.c.warp_specialized ? pb.allocate_shared("smem_b", u32, {k.STAGES, code_rows, row})
                                       : pb.allocate_shared("smem_b", u32, {k.STAGES, k.TILE_WORDS});
  std::optional<Tensor> full;  // TMA copies: a stage's barrier
  if (k.c.tma) full = pb.allocate_barrier("full", 1, k.STAGES);
  std::optional<Tensor> smem_s, smem_z;
  if (!k.s.per_channel) smem_s = pb.allocate_shared("smem_s", at, {k.STAGES, k.SROWS, k.BN});
  if (gz && !k.s.per_channel) smem_z = pb.allocate_shared("smem_z", at, {k.STAGES, k.SROWS, k.BN});
  return MatmulData{c_ptr, p_ptr, count_ptr, m,       n,   bi,    bj,     bz,     ga,     gt,     gs,  gz,
                    first, count, k_tiles,   tiles_m, per, total, smem_a, smem_b, smem_s, smem_z, full};
}

}  // namespace

MatmulConstants::MatmulConstants(const QMatmulProblem& problem, const QMatmulConfig& config)
    : p(problem),
      c(config),
      s(checked_shape(problem, config)),
      fits(qmatmul_weight_fits(problem.wtype, problem.atype)),
      batched(config.warps_k > 1),
      pb("qmatmul") {
  BM = pb.constant("BM", c.block_m);
  BN = pb.constant("BN", c.block_n);
  BK = pb.constant("BK", c.block_k);
  SK = pb.constant("SK", c.slice_k);
  G = pb.constant("G", p.group);
  STAGES = pb.constant("STAGES", c.stages);
  SPLIT = pb.constant("SPLIT", c.split_k);
  WK = batched ? pb.constant("WK", c.warps_k) : 1;
  SLICE_WORDS = pb.constant("SLICE_WORDS", s.slice_words);
  TILE_WORDS = pb.constant("TILE_WORDS", s.tile_words);
  SROWS = s.per_channel ? 0 : pb.constant("SROWS", s.scale_rows);
}

MatmulPipeline::MatmulPipeline(MatmulConstants& constants)
    : MatmulData(declare(constants)), k(constants), pb(constants.pb) {}

void MatmulPipeline::preload(const ir::Scalar& t, const ir::Scalar& stage) {
  using ir::from;
  ir::Scalar kt = first + t;
  pb.copy_async(smem_a[stage], ga(from(bi * k.BM), from(kt * k.BK)));
  if (full) return;  // the rest is preload_tma's
  pb.copy_async(smem_b[stage], gt(kt, bj));
  if (smem_s) {
    // The group rows this tile covers: BK / G rows from kt * BK / G, or the one row holding it.
    ir::Scalar row = (kt * k.BK) / k.G;
    pb.copy_async((*smem_s)[stage], gs(from(row), from(bj * k.BN)));
    if (smem_z) pb.copy_async((*smem_z)[stage], (*gz)(from(row), from(bj * k.BN)));
  }
}

void MatmulPipeline::preload_tma(const ir::Scalar& t, const ir::Scalar& stage) {
  using ir::from;
  ir::Scalar kt = first + t;
  // Thread 0 arms the stage's barrier with the bytes of its codes, scales and zeros, and issues the copies.
  ir::TensorRef bar = (*full)[stage];
  pb.barrier_arrive(bar, ir::Scalar(k.s.weight_stage_bytes));
  pb.copy_tma(smem_b[stage], gt(from((kt * ceil_div(n, k.BN) + bj) * k.TILE_WORDS)), bar);
  if (smem_s) {
    ir::Scalar row = (kt * k.BK) / k.G;
    pb.copy_tma((*smem_s)[stage], gs(from(row), from(bj * k.BN)), bar);
    if (smem_z) pb.copy_tma((*smem_z)[stage], (*gz)(from(row), from(bj * k.BN)), bar);
  }
}

void MatmulPipeline::loop(const std::function<void(const ir::Scalar& uk)>& step) {
  using ir::Scalar;
  const int64_t STAGES = k.STAGES;
  // Prologue: tiles 0 .. STAGES - 2, one commit group each (empty past the end, so that the wait below
  // always counts the same number of groups).
  pb.for_range("t0", STAGES - 1, [&](Scalar t0) {
    pb.if_(t0 < count, [&] { preload(t0, t0); });
    pb.copy_async_commit_group();
  });
  // TMA copies (QMatmulConfig::tma): the codes, scales and zeros of all STAGES stages in flight from the
  // start, each stage on its barrier; A stays a cp.async (a row-major TMA box of it made ldmatrix conflict
  // 8 ways, a chunk-major one took the TMA 128 rows of 16 bytes a stage: both measured slower).
  if (full) pb.for_range("t1", STAGES, [&](Scalar t1) { pb.if_(t1 < count, [&] { preload_tma(t1, t1); }); });
  pb.copy_async_wait_group(STAGES - 2);
  pb.synchronize();

  cur_ = pb.let("cur", 0);
  Scalar next = pb.let("next", STAGES - 1);
  pb.for_range("t", count, [&](Scalar t) {
    // Tile t's codes are in when its stage's barrier completes its (t / STAGES)-th phase.
    if (full) pb.barrier_wait((*full)[cur_], (t / STAGES) % 2);
    // Step uk: slices uk * WK .. uk * WK + WK - 1 of the stage, one per group of warps along K.
    pb.for_range("uk", k.BK / (k.SK * k.WK), [&](Scalar uk) { step(uk); });
    // Refill the stage that tile t - 1 used with tile t + STAGES - 1 (an empty group past the end).
    pb.if_(t + (STAGES - 1) < count, [&] { preload(t + (STAGES - 1), next); });
    pb.copy_async_commit_group();
    pb.assign(cur_, (cur_ + 1) % STAGES);
    pb.assign(next, (next + 1) % STAGES);
    pb.copy_async_wait_group(STAGES - 2);
    pb.synchronize();
    // `next` is now tile t's stage, which every thread has read: thread 0 refills its codes with tile
    // t + STAGES (the arrival right after the Synchronize needs no barrier of its own on the GPU).
    if (full) pb.if_(t + STAGES < count, [&] { preload_tma(t + STAGES, next); });
  });
}

ir::Tensor MatmulPipeline::load_a(const ir::Scalar& uk, const Layout& layout) {
  return pb.load_shared("a", smem_a[cur_], layout, {0, uk * (k.SK * k.WK)});
}

ir::Tensor MatmulPipeline::load_codes(const ir::Scalar& uk, const Layout& layout_bt) {
  return pb.load_shared("bt", smem_b[cur_], layout_bt, {uk * (k.SLICE_WORDS * k.WK)});
}

ir::Tensor MatmulPipeline::convert_codes(const ir::Tensor& bt, const Layout& layout_b,
                                         const std::optional<PairLayouts>& pairs) {
  const DataType at = k.p.atype;
  if (!pairs) {
    ir::Tensor b = pb.view("b", bt, k.p.wtype, layout_b);
    return k.p.wtype == at ? b : pb.cast("bf", b, at);
  }
  // Stored with each pair's codes 16 bits apart (qmatmul_layouts.h): reordered as they convert.
  ir::Tensor b = pb.view("b", bt, k.p.wtype, pairs->stored);
  ir::Tensor bf3 = pb.cast("bf3", b, at, pairs->mma);
  return pb.view("bf", bf3, layout_b);
}

ir::Tensor MatmulPipeline::slice_row(const std::string& name, const ir::TensorRef& smem, const Layout& rows,
                                     const ir::Scalar& uk) {
  ir::Scalar row = k.s.scale_rows > 1 ? ir::Scalar((uk * k.SK) / k.G) : ir::Scalar(0);
  return pb.load_shared(name, smem, rows, {row, 0});
}

void MatmulPipeline::accumulate(const ir::Tensor& acc, const ir::Tensor& a, ir::Tensor bf,
                                const Layout& layout_c, const std::function<ir::Tensor()>& zeros,
                                const std::function<ir::Tensor()>& scales) {
  using namespace ir;
  const DataType f32 = DataType::f32();
  if (zeros) bf = pb.sub("bf", bf, zeros());
  if (k.s.per_channel) {
    pb.dot(out(acc), a, bf, acc);
    return;
  }
  Tensor part = pb.allocate_register("part", f32, layout_c, 0.0);
  pb.dot(out(part), a, bf, part);
  Tensor sc32 = pb.cast("sc32", scales(), f32);
  pb.fma(out(acc), part, sc32, acc);
}

Layout MatmulPipeline::partials_layout() const {
  const int64_t threads = k.c.threads();
  auto pow2_divisor = [](int64_t x) { return x & -x; };
  const int64_t v = 4;
  const int64_t tcols = std::min(pow2_divisor(k.BN / v), pow2_divisor(threads));
  const int64_t trows = std::min(pow2_divisor(threads) / tcols, pow2_divisor(k.BM));
  Layout lay =
      layout::local(k.BM / trows, k.BN / (tcols * v)) * layout::spatial(trows, tcols) * layout::local(1, v);
  if (threads != trows * tcols) lay = layout::replicate(threads / (trows * tcols)) * lay;
  return lay;
}

void MatmulPipeline::scale_per_channel(const ir::Tensor& result, const Layout& layout_o,
                                       const ir::Scalar& tile_n) {
  using namespace ir;
  if (!k.s.per_channel || !k.fits) return;
  Tensor sc =
      pb.load_global("sc", gs, pb.named_layout("layout_so", column_row(layout_o)), {0, tile_n * k.BN});
  Tensor sc32 = pb.cast("sc32", sc, DataType::f32());
  pb.mul(out(result), result, sc32);
}

void MatmulPipeline::sum_when_last(const ir::Tensor& gp, const ir::Tensor& gc, const ir::Tensor& gcount,
                                   const Layout& layout_r, const ir::Scalar& parts, const ir::Scalar& tile,
                                   const ir::Scalar& tile_m, const ir::Scalar& tile_n) {
  using namespace ir;
  const Scalar ticket = pb.take_ticket("ticket", gcount, parts, {tile});
  pb.if_(ticket == parts - 1, [&] {
    Tensor sum = pb.load_global("sum", gp[0], layout_r, {tile_m * k.BM, tile_n * k.BN});
    pb.for_range("z", 1, parts, [&](Scalar z) {
      Tensor part = pb.load_global("part", gp[z], layout_r, {tile_m * k.BM, tile_n * k.BN});
      pb.add(out(sum), sum, part);
    });
    Tensor cv = pb.cast("cv", sum, k.p.atype);
    pb.store_global(cv, gc, {tile_m * k.BM, tile_n * k.BN});
  });
}

void MatmulPipeline::store(const ir::Tensor& result, const Layout& layout_o) {
  using namespace ir;
  const DataType at = k.p.atype, f32 = DataType::f32();
  scale_per_channel(result, layout_o, bj);
  if (k.c.split_k == 1) {
    Tensor gc = pb.view_global("gc", c_ptr, at, {m, n});
    Tensor cv = pb.cast("cv", result, at);
    pb.store_global(cv, gc, {bi * k.BM, bj * k.BN});
    return;
  }
  // Split-K in one launch: each of the SPLIT blocks of a tile stores its partial sums and takes a ticket
  // from the tile's counter. The last adds the SPLIT partials in the order z = 0, 1, ... whichever block it
  // is (the same bits every run) and stores C. Its layout spreads the [BM, BN] tile over the computing
  // threads, 4 consecutive f32 each (16-byte loads; BN is a multiple of 8), as many threads along a row and
  // down a column as powers of two dividing them allow; each thread repeats its part over the rest of the
  // tile, and threads beyond those hold replicas.
  Tensor gp = pb.view_global("gp", *p_ptr, f32, {k.SPLIT, m, n});
  pb.store_global(result, gp[bz], {bi * k.BM, bj * k.BN});
  const Layout layout_r = pb.named_layout("layout_r", partials_layout());
  Tensor gc = pb.view_global("gc", c_ptr, at, {m, n});
  const Scalar tiles_m = ceil_div(m, k.BM);
  Tensor gcount = pb.view_global("gcount", *count_ptr, DataType::i32(), {tiles_m * ceil_div(n, k.BN)});
  sum_when_last(gp, gc, gcount, layout_r, Scalar(k.SPLIT), bi + bj * tiles_m, bi, bj);
}

}  // namespace tilevm::ops
