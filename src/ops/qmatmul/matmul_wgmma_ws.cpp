// The wgmma form with warp specialization (QMatmulConfig::warp_specialized, sm_90a): the product of
// matmul_wgmma.cpp, C^T[BN, BM] = W^T[BN, BK] @ A^T, with the copies taken off the computing warps.
//
// Warpgroup 0, the producer, fills the STAGES stages with the TMA: per k-tile the activations [BM, BK] (one
// copy per column group as the consumers multiply it: 64 columns 128-byte swizzled, or with register A 32
// columns 64-byte swizzled), the codes (rows of QMatmulShape::code_row_words of the transformed tile) and
// the tile's scale (and zero) rows, all completing on full[stage]. The consumer
// warpgroups 1 .. BN / 64, one per 64 columns of C, run each step as
//
//   BarrierWait(full[stage])                             (the stage has landed)
//   codes -> registers, cast to ATYPE, minus the zeros, times the scales (one rounding, as the dequantize
//   program) -> the dequantized tile w[b] in shared memory (b = step % 2)
//   Synchronize                                          (the consumers' stores are complete)
//   DotAsync(w[b][h], A[stage][h], acc) per 64-column group h
//   DotAsyncWait(BK / 64)                                (the previous step's products are done)
//   BarrierArrive(empty[previous stage])                 (its operands are read: the producer may refill it)
//
// so that no computing thread spends instructions on copy addresses or waits on a block-wide barrier, and the
// next tile is dequantized while this one's products run. A stage is used for the (t / STAGES)-th time at
// step t: its phases have parity (t / STAGES) % 2, and the producer's first wait on each empty barrier
// returns at once (parity 1 before phase 0). w alternates as in the other wgmma form: a step writes the
// buffer that the products two steps back read, retired by the wait of the step before.
//
// With register A (QMatmulConfig::register_a, wgmma's RS form) a consumer's step is
//
//   BarrierWait(full[stage])
//   the stage's zero and scale rows
//   w0 = the codes of column group 0 -> registers, cast, minus the zeros, times the scales
//   DotAsync(w0, A[stage][0], acc)
//   w1 = column group 1, the same, while the product of group 0 runs
//   DotAsync(w1, A[stage][1], acc)                       (each group in registers of its own)
//   w2 = group 2; DotAsyncWait(1) (retires group 0); DotAsync(w2, ...) ...
//                                                        (at most two products in flight and one converting)
//   DotAsyncWait(0)                                      (every product of the step is done)
//   BarrierArrive(empty[stage])
//
// No product is in flight when the loop goes round: the code generator takes the RS form only so
// (emit_wgmma.cpp says why). The step's last product thus runs alone; converting the next step's group 0
// meanwhile (carried round the loop) was tried: ptxas scheduled that conversion after the wait, as nothing
// in the PTX ties it before.
#include <functional>
#include <optional>

#include "qmatmul_stages.h"
#include "tilevm/target/limits.h"
#include "tilevm/target/wgmma.h"

namespace tilevm::ops {

namespace {

using namespace ir;
using layout::Layout;

// The consumers' loop, in either form; what both take from the program.
struct Consumers {
  MatmulConstants& k;
  MatmulPipeline& m;
  const Tensor &full, &empty, &acc;
  const std::optional<Tensor>& zero_row;  // per channel with zero points: loaded once, before the loop
  const Layout& layout_sc;                // a [1, BN] row of scales or zeros, broadcast along k
  // Stream-K: run at the end of step t, after its products are retired (register A only).
  std::function<void(const Scalar& t)> after_step;

  // The stage's zero row (one slice per k-tile, slice_k == block_k: the stage's row 0).
  Tensor zeros(const Scalar& stage) const {
    return zero_row ? *zero_row : m.slice_row("z", (*m.smem_z)[stage], layout_sc, Scalar(0));
  }
  Tensor scales(const Scalar& stage) const {
    return m.slice_row("sc", (*m.smem_s)[stage], layout_sc, Scalar(0));
  }
};

// The dequantized tile through shared memory (the first step in the comment at the top).
struct SharedA {
  Layout layout_w, layout_wt, layout_w3, layout_bt, layout_bt2, smem_w_layout;
  std::optional<Tensor> smem_w;

  SharedA(MatmulConstants& k, const SliceLayouts& l) {
    ProgramBuilder& pb = k.pb;
    const QMatmulConfig& c = k.c;
    const int64_t H = c.block_k / 64;                  // 64-column groups of a k-tile
    const int64_t per_row = k.s.words_per_thread / 4;  // 16-byte chunks of a thread's codes
    layout_w = pb.named_layout("layout_w", l.b);       // [BN, BK] as dequantized
    // The same registers as [BK, BN] (scale and zero rows broadcast along k) and as [BK / 64, BN, 64] (the
    // column groups, as they are stored).
    layout_wt = pb.named_layout("layout_wt", layout::transpose(l.b));
    layout_w3 = pb.named_layout("layout_w3", layout::spatial(1, c.warps_n / 4, 1) * layout::local(H, 1, 1) *
                                                 layout::spatial(1, 16, 8) * layout::local(1, 4, 1) *
                                                 layout::local(1, 1, 8));
    layout_bt = pb.named_layout("layout_bt", l.bt);
    // The codes' words as the TMA left them, [code_rows, 256]: thread t's chunk i is word (i T + t) * 4 of
    // the tile (l.bt), which is row i T / 64 + t / 64, column (t % 64) * 4.
    layout_bt2 =
        pb.named_layout("layout_bt2", layout::local(per_row, 1) * layout::spatial(c.threads() / 64, 64) *
                                          layout::local(1, 4));
  }
  // The two dequantized tiles: named after the program's other layouts, allocated after the pipeline's
  // shared tiles.
  void name_shared(MatmulConstants& k) {
    smem_w_layout =
        k.pb.named_layout("smem_w_layout", layout::local(2, k.c.block_k / 64, 1, 1) *
                                               target::wgmma_swizzled_tile(k.c.block_n, 64, 16, 128));
  }
  void allocate(MatmulConstants& k) { smem_w = k.pb.allocate_shared("smem_w", k.p.atype, smem_w_layout); }
  void steps(const Consumers& u) const;
};

void SharedA::steps(const Consumers& u) const {
  MatmulConstants& k = u.k;
  MatmulPipeline& m = u.m;
  ProgramBuilder& pb = k.pb;
  const int64_t H = k.c.block_k / 64;
  Scalar wbuf = pb.let("wbuf", 0);
  pb.for_range("t", m.count, [&](const Scalar& t) {
    Scalar stage = pb.let("stage", t % k.STAGES);
    pb.barrier_wait(u.full[stage], (t / k.STAGES) % 2);
    Tensor bt2 = pb.load_shared("bt2", m.smem_b[stage], layout_bt2);
    Tensor w = m.convert_codes(pb.view("bt", bt2, layout_bt), layout_w, std::nullopt);
    Tensor wt = pb.view("wt", w, layout_wt);
    if (m.gz) wt = pb.sub("wt", wt, u.zeros(stage));
    if (!k.s.per_channel) wt = pb.mul("wt", wt, u.scales(stage));
    pb.store_shared(pb.view("ws", wt, layout_w3), (*smem_w)[wbuf]);
    pb.synchronize();
    for (int64_t h = 0; h < H; ++h)
      pb.dot_async((*smem_w)(wbuf, h), m.smem_a(stage, h), u.acc, DotOptions{.transpose_b = true});
    pb.dot_async_wait(H);
    pb.if_(t > 0, [&] { pb.barrier_arrive(u.empty[(t + (k.STAGES - 1)) % k.STAGES]); });
    pb.assign(wbuf, 1 - wbuf);
  });
}

// Register A (the second step in the comment at the top).
struct RegisterA {
  Layout layout_wc, layout_wct, layout_cc;
  const RegisterAGroups& g;

  explicit RegisterA(MatmulConstants& k) : g(k.s.register_a) {
    ProgramBuilder& pb = k.pb;
    const QMatmulConfig& c = k.c;
    // One group, [BN, group_k] as the DotAsync reads it (l.b's group) and the same registers as [group_k,
    // BN], along which the scale and zero rows broadcast.
    layout_wc =
        pb.named_layout("layout_wc", layout::spatial(c.warps_n / 4, 1) * layout::local(1, g.group_k / 16) *
                                         target::wgmma_register_a());
    layout_wct = pb.named_layout("layout_wct", layout::transpose(layout_wc));
    // A group's codes, rows of the codes' tile [T / 32 groups of rows, 32 wc] (RegisterAGroups): thread t's
    // wc words at row t / 32, column (t % 32) wc of its group's rows.
    layout_cc = pb.named_layout("layout_cc", layout::spatial(c.threads() / 32, 32) * layout::local(1, g.wc));
  }
  void steps(const Consumers& u) const;
};

void RegisterA::steps(const Consumers& u) const {
  MatmulConstants& k = u.k;
  MatmulPipeline& m = u.m;
  ProgramBuilder& pb = k.pb;
  const DataType at = k.p.atype;
  pb.for_range("t", m.count, [&](const Scalar& t) {
    Scalar stage = pb.let("stage", t % k.STAGES);
    pb.barrier_wait(u.full[stage], (t / k.STAGES) % 2);
    // One slice per k-tile: one zero and one scale row for all the step's groups.
    std::optional<Tensor> z, sc;
    if (m.gz) z = u.zeros(stage);
    if (!k.s.per_channel) sc = u.scales(stage);
    // Group h: its codes, cast, minus the zeros, times the scales, as the DotAsync reads it.
    auto convert = [&](int64_t h) {
      Tensor cc = pb.load_shared("cc", m.smem_b[stage], layout_cc, {Scalar(h * k.c.threads() / 32), 0});
      Tensor w = pb.view("b", cc, k.p.wtype, layout_wct);
      if (k.p.wtype != at) w = pb.cast("bf", w, at);
      if (z) w = pb.sub("wt", w, *z);
      if (sc) w = pb.mul("wt", w, *sc);
      return pb.view("wa", w, layout_wc);
    };
    // Straight-line code: group h + 1 converts into registers of its own while the products of groups h and
    // h - 1 run, and the wait after it retires group h - 1 (the first would retire nothing); the step's last
    // product retires before the stage goes back to the producer and the loop goes round.
    Tensor w = convert(0);
    for (int64_t h = 0; h < g.groups; ++h) {
      pb.dot_async(w, m.smem_a(stage, h), u.acc, DotOptions{.transpose_b = true});
      if (h + 1 < g.groups) {
        w = convert(h + 1);
        if (h > 0) pb.dot_async_wait(1);
      }
    }
    pb.dot_async_wait(0);
    pb.barrier_arrive(u.empty[stage]);
    if (u.after_step) u.after_step(t);
  });
}

// Stream-K (QMatmulConfig::stream_k; StreamK in qmatmul.h): where the block's run leaves a tile (its
// last k-tile, or the run's end), the consumers store what they summed of it and start the next from zero.
// A block that summed all of the tile's k-tiles stores C; otherwise its partial sums go to its slot of the
// workspace and it takes a ticket from the tile's counter, and the last of the tile's blocks adds the slots
// in order (the same bits every run) and stores C, as split-K's last block does.
struct StreamKFlush {
  MatmulConstants& k;
  MatmulPipeline& m;
  const Tensor& acc;
  const Layout& layout_acc;
  const Layout& layout_c;
  std::optional<Tensor> gp, gc, gcount;
  Layout layout_r;
  std::optional<Scalar> tile_end;  // the step that ends the block's current tile

  StreamKFlush(MatmulConstants& k, MatmulPipeline& m, const Tensor& acc, const Layout& layout_acc,
               const Layout& layout_c)
      : k(k), m(m), acc(acc), layout_acc(layout_acc), layout_c(layout_c) {
    ProgramBuilder& pb = k.pb;
    const DataType f32 = DataType::f32();
    // At most `slots` blocks share a tile (the same sums as stream_k_split: the workspace holds them).
    Scalar slots = pb.let("slots", min(ceil_div(m.iterations, m.per), ceil_div(m.k_tiles - 1, m.per) + 1));
    gp = pb.view_global("gp", *m.p_ptr, f32, {slots, m.m, m.n});
    gc = pb.view_global("gc", m.c_ptr, k.p.atype, {m.m, m.n});
    gcount = pb.view_global("gcount", *m.count_ptr, DataType::i32(), {m.tiles_m * ceil_div(m.n, k.BN)});
    layout_r = pb.named_layout("layout_r", m.partials_layout());
    // Counted from step to step, so that the loop divides only where a tile ends.
    tile_end = pb.let("tile_end", m.k_tiles - 1 - m.first % m.k_tiles);
  }

  void operator()(const Scalar& t) const {
    ProgramBuilder& pb = k.pb;
    const DataType at = k.p.atype, f32 = DataType::f32();
    pb.if_(logical_or(t == *tile_end, t == m.count - 1), [&] {
      pb.assign(*tile_end, *tile_end + m.k_tiles);
      Scalar tile = pb.let("tile", (m.first + t) / m.k_tiles);
      Scalar bi = pb.let("ti", tile % m.tiles_m), bj = pb.let("tj", tile / m.tiles_m);
      // The blocks that share the tile: from the one holding its first k-tile to the one holding its last.
      Scalar lead = pb.let("lead", (tile * m.k_tiles) / m.per);
      Scalar parts = pb.let("parts", ((tile + 1) * m.k_tiles - 1) / m.per - lead + 1);
      Tensor result = pb.view("acc_t", acc, layout_c);
      m.scale_per_channel(result, layout_c, bj);
      pb.if_(parts == 1, [&] {
          pb.store_global(pb.cast("cv", result, at), *gc, {bi * k.BM, bj * k.BN});
        }).else_([&] {
        pb.store_global(result, (*gp)[m.first / m.per - lead], {bi * k.BM, bj * k.BN});
        m.sum_when_last(*gp, *gc, *gcount, layout_r, parts, tile, bi, bj);
      });
      // The next tile's sums start from zero.
      Tensor zero = pb.allocate_register("zero", f32, layout_acc, 0.0);
      pb.add(out(acc), zero, Scalar(0.0));
    });
  }
};

}  // namespace

ir::Program build_wgmma_ws_matmul(const QMatmulProblem& p, const QMatmulConfig& c) {
  MatmulConstants k(p, c);
  ProgramBuilder& pb = k.pb;
  const DataType f32 = DataType::f32();
  const int64_t consumers = c.warps_n / 4;                        // warpgroups that compute
  const int64_t code_rows = k.s.tile_words / k.s.code_row_words;  // the codes' tile as rows
  const SliceLayouts l = slice_layouts(c, k.s, 1, 1);
  std::optional<SharedA> shared_a;
  std::optional<RegisterA> register_a;
  if (c.register_a)
    register_a.emplace(k);
  else
    shared_a.emplace(k, l);
  const Layout layout_acc = pb.named_layout("layout_acc", l.dot_c);  // C^T [BN, BM]
  const Layout layout_c = pb.named_layout("layout_c", l.c);          // [BM, BN]: the same registers
  const Layout layout_sc = pb.named_layout("layout_sc", column_row(layout::transpose(l.b)));
  if (shared_a) shared_a->name_shared(k);

  MatmulPipeline m(k);
  if (shared_a) shared_a->allocate(k);
  Tensor full = pb.allocate_barrier("full", 1, c.stages);
  Tensor empty = pb.allocate_barrier("empty", 1, c.stages);
  const int64_t stage_bytes = k.s.stage_bytes;  // what the copies of a stage bring: the full barrier's tx
  Scalar n_tiles = pb.let("n_tiles", ceil_div(m.n, k.BN));
  pb.warpgroups(0, 1, target::kProducerRegisters, [&] {
    pb.for_range("t", m.count, [&](const Scalar& t) {
      Scalar stage = pb.let("stage", t % k.STAGES);
      // The step's tile and k-tile: the block's own, or with stream-K those of iteration first + t.
      Scalar kt, bi = m.bi, bj = m.bj;
      if (c.stream_k > 0) {
        Scalar it = pb.let("it", m.first + t);
        Scalar tile = pb.let("tile", it / m.k_tiles);
        kt = pb.let("kt", it % m.k_tiles);
        bi = pb.let("ti", tile % m.tiles_m);
        bj = pb.let("tj", tile / m.tiles_m);
      } else {
        kt = pb.let("kt", m.first + t);
      }
      pb.barrier_wait(empty[stage], (t / k.STAGES + 1) % 2);
      pb.barrier_arrive(full[stage], Scalar(stage_bytes));
      // The activations in column groups as the consumers read them: 64 wide (128-byte swizzle), or with
      // register A qmatmul_rs_group_k.
      const int64_t width = c.register_a ? k.s.register_a.group_k : 64;
      for (int64_t h = 0; h < k.BK / width; ++h)
        pb.copy_tma(m.smem_a(stage, h), m.ga(from(bi * k.BM), from(kt * k.BK + h * width)), full[stage]);
      pb.copy_tma(m.smem_b[stage], m.gt(from((kt * n_tiles + bj) * code_rows), from(0)), full[stage]);
      if (m.smem_s) {
        Scalar row = (kt * k.BK) / k.G;
        pb.copy_tma((*m.smem_s)[stage], m.gs(from(row), from(bj * k.BN)), full[stage]);
        if (m.smem_z) pb.copy_tma((*m.smem_z)[stage], (*m.gz)(from(row), from(bj * k.BN)), full[stage]);
      }
    });
  });

  pb.warpgroups(1, 1 + consumers, target::consumer_registers(c.threads()), [&] {
    Tensor acc = pb.allocate_register("acc", f32, layout_acc, 0.0);
    // Per channel, the one row of zero points is loaded once (the scales multiply C in m.store).
    std::optional<Tensor> zero_row;
    if (m.gz && k.s.per_channel) zero_row = pb.load_global("zero_row", *m.gz, layout_sc, {0, m.bj * k.BN});
    Consumers u{k, m, full, empty, acc, zero_row, layout_sc, {}};
    std::optional<StreamKFlush> flush;
    if (c.stream_k > 0) {
      flush.emplace(k, m, acc, layout_acc, layout_c);
      u.after_step = std::ref(*flush);
    }
    if (register_a)
      register_a->steps(u);
    else
      shared_a->steps(u);
    if (!register_a) pb.dot_async_wait(0);  // register A's steps retire every product themselves
    if (!flush) m.store(pb.view("acc_t", acc, layout_c), layout_c);
  });
  return pb.build();
}

}  // namespace tilevm::ops
