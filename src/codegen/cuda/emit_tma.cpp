// Barriers and TMA copies (ir/inst/tma.h), sm_90: one emit_* per instruction. A barrier is an mbarrier word
// in the planned shared memory. The block's (or region's) arrival must stand for every thread's earlier
// instructions (an arrival often says "this stage has been read"): one elected thread arrives after a
// __syncthreads() (the region's named barrier inside a region), or, for the barriers of a pipeline's
// protocol (barrier_arrivals.cpp), each warp arrives on its own after a __syncwarp and the mbarrier counts
// the warps. A
// CopyTma is issued by thread 0 through a tensor map that the runtime encodes at launch from the source view
// (a __grid_constant__ kernel parameter, KernelParam::Kind::TensorMap) and completes on its barrier; every
// thread spins on mbarrier.try_wait.parity in BarrierWait. For targets without Hopper the emitter refuses
// them.
#include <fmt/format.h>

#include "emitter.h"
#include "tilevm/target/tma_swizzle.h"

namespace tilevm::codegen::cuda {

namespace {

// The CUtensorMap a kernel receives by value: 128 opaque bytes, 64-byte aligned.
constexpr const char* kTensorMapType =
    "struct __align__(64) tv_tensor_map { unsigned long long opaque[16]; };\n";

}  // namespace

// One tensor map per (view, box, swizzle), shared by the copies and stores that agree on all three.
std::string Emitter::tensor_map(const ir::ViewGlobalInst* view, const std::vector<int64_t>& box,
                                int swizzle) {
  if (swizzle > 0) uses_swizzle_period_ = true;
  for (const KernelParam& p : tensor_maps_)
    if (p.view == view && p.box == box && p.swizzle_bytes == swizzle) return p.name;
  const std::string map = fresh(fmt::format("tv_tmap_{}", tensor_maps_.size()));
  KernelParam p;
  p.kind = KernelParam::Kind::TensorMap;
  p.name = map;
  p.dtype = view->dtype;
  p.c_type = "const __grid_constant__ tv_tensor_map";
  p.view = view;
  p.pointer = view->ptr->as<ir::VarRef>()->var->name;
  p.box = box;
  p.swizzle_bytes = swizzle;
  tensor_maps_.push_back(p);
  helper_functions_["tv_tensor_map"] = kTensorMapType;
  return map;
}

std::string Emitter::barrier_address(const ir::TensorArg& arg) {
  const MemTensor& m = mem(arg.tensor);
  const ElementAccess a = access(m, arg, {}, {});
  return fmt::format("((unsigned)__cvta_generic_to_shared({}) + 8u * (unsigned)({}))", m.ptr, a.offset.text);
}

void Emitter::require_hopper(const ir::InstStmt& s) {
  if (!options_.target.features.hopper)
    unsupported(s, fmt::format("{} needs sm_90 or newer (the tensor-memory accelerator and transaction "
                               "barriers); the target is {}",
                               s.inst->name(), options_.target.arch));
}

void Emitter::emit_allocate_barrier(const ir::InstStmt& s, const ir::AllocateBarrierInst& n) {
  require_hopper(s);
  if (s.results.empty()) return;
  if (!n.placement) unsupported(s, "the barriers are not placed (run transform::lower first)");
  const ir::Var& var = s.results[0];
  MemTensor m;
  m.scope = ir::Scope::Barrier;
  m.dtype = DataType::uint(64);
  m.layout = *var->type.tensor->layout;
  for (int64_t e : m.layout->shape()) m.shape.push_back(cconst(e));
  m.ptr = fmt::format("(tv_smem + {})", n.placement->offset);
  m.ptr_align = 16;
  mems_[var.get()] = m;
  const auto per_warp = arrival_warps_.find(var.get());
  const int64_t warps = per_warp == arrival_warps_.end() ? 1 : per_warp->second;
  note(s, fmt::format("barriers: shared bytes [{}, {}){}", n.placement->offset,
                      n.placement->offset + n.placement->bytes,
                      warps > 1 ? fmt::format("; every arrival is {} warps', each its own (the count x {})",
                                              warps, warps)
                                : ""));
  open("if (t == 0)");
  open(fmt::format("for (int i = 0; i < {}; ++i)", m.layout->num_locals()));
  line(
      fmt::format("asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"((unsigned)"
                  "__cvta_generic_to_shared({}) + 8u * (unsigned)i), \"r\"({}) : \"memory\");",
                  m.ptr, n.count * warps));
  close();
  line("asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");");
  close();
  line("__syncthreads();  // the barriers are initialized before any thread uses them");
}

void Emitter::emit_barrier_arrive(const ir::InstStmt& s, const ir::BarrierArriveInst& n) {
  require_hopper(s);
  const std::string addr = barrier_address(n.barrier);
  const bool per_warp = arrival_warps_.count(n.barrier.tensor.get()) > 0;
  if (n.rank) {
    // Another block's barrier (the same offset in its shared memory, mapa's address in the cluster's
    // window). The arrival keeps mbarrier.arrive's default semantics, a release at CTA scope, as CUTLASS's
    // and Triton's cluster pipelines do: what it must order is this block's reads of its own stage (done
    // when DotAsyncWait or the load returned) before the other block's multicast overwrites it, and the
    // VM orders nothing else through it (global memory between blocks needs ClusterSync()). A release
    // at cluster scope (.release.cluster) made every step of the ping-pong cluster GEMM wait about 1 us
    // on the H200: 2.6 times the time of the same kernel without clusters (docs/performance.md).
    line(per_warp ? "__syncwarp();  // this warp's part of the arrival"
                  : "__syncthreads();  // the block's arrival: every thread's earlier instructions are done");
    open(per_warp ? "if ((t & 31) == 0)" : "if (t == 0)");
    line("unsigned tv_remote;");
    line(
        fmt::format("asm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(tv_remote) : \"r\"({}), "
                    "\"r\"((unsigned)({})));",
                    addr, int_expr(n.rank).text));
    if (n.tx)
      line(
          fmt::format("asm volatile(\"mbarrier.arrive.expect_tx.shared::cluster.b64 _, [%0], "
                      "%1;\" :: \"r\"(tv_remote), \"r\"((unsigned)({})) : \"memory\");",
                      int_expr(n.tx).text));
    else
      line(
          "asm volatile(\"mbarrier.arrive.shared::cluster.b64 _, [%0];\" :: \"r\"(tv_remote) "
          ": "
          "\"memory\");");
    close();
    return;
  }
  if (per_warp) {
    line("__syncwarp();  // this warp's part of the arrival: its threads' earlier instructions are done");
    line(fmt::format(
        "if ((t & 31) == 0) asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\" :: \"r\"({}) "
        ": \"memory\");",
        addr));
    return;
  }
  if (synced_arrivals_.count(&s))
    line(
        "// the block's arrival: the Synchronize() just before it finished every thread's earlier "
        "instructions");
  else
    line("__syncthreads();  // the block's arrival: every thread's earlier instructions are done");
  if (n.tx)
    line(
        fmt::format("if (t == 0) asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" "
                    ":: \"r\"({}), \"r\"((unsigned)({})) : \"memory\");",
                    addr, int_expr(n.tx).text));
  else
    line(
        fmt::format("if (t == 0) asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\" :: \"r\"({}) : "
                    "\"memory\");",
                    addr));
}

void Emitter::emit_barrier_wait(const ir::InstStmt& s, const ir::BarrierWaitInst& n) {
  require_hopper(s);
  line("{");  // a scope for the loop's names
  ++indent_;
  line(fmt::format("const unsigned tv_bar = {};", barrier_address(n.barrier)));
  line(fmt::format("const unsigned tv_parity = (unsigned)({});", int_expr(n.parity).text));
  line("unsigned tv_done = 0;");
  open("do");
  line(
      "asm volatile(\"{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, "
      "1, 0, p; }\" : \"=r\"(tv_done) : \"r\"(tv_bar), \"r\"(tv_parity) : \"memory\");");
  close("} while (!tv_done);");
  close();
}

// What a TMA copy in either direction needs: the tensor map of the global view with the shared tile as its
// box (the tile's extents on the view's kept dimensions, 1 on its indexed ones), the view's origin
// coordinates innermost first, and the tile's shared address.
Emitter::TmaOperands Emitter::tma_operands(const ir::InstStmt& s, const ir::TensorArg& tile,
                                           const ir::TensorArg& global) {
  const char* what = s.inst->name().c_str();
  const MemTensor& sm = mem(tile.tensor);
  const MemTensor& gm = mem(global.tensor);
  const auto found = global_view_insts_.find(global.tensor.get());
  if (found == global_view_insts_.end())
    unsupported(s,
                fmt::format("the global view of {} must be a ViewGlobal (the verifier checks this)", what));
  const std::vector<int> kept = kept_dims(gm, global);
  const std::vector<int> tile_kept = kept_dims(sm, tile);
  if (kept.size() != tile_kept.size()) unsupported(s, fmt::format("{} views of different ranks", what));
  TmaOperands t;
  std::vector<int64_t> box(gm.shape.size(), 1);
  for (size_t k = 0; k < kept.size(); ++k)
    box[static_cast<size_t>(kept[k])] = sm.layout->shape()[static_cast<size_t>(tile_kept[k])];
  const int swizzle = target::tma_swizzle_bytes(*sm.layout, sm.dtype.bits());
  if (swizzle < 0)
    unsupported(s, fmt::format("the shared tile of {} is neither row-major nor swizzled for the TMA", what));
  t.map = tensor_map(found->second, box, swizzle);
  const ElementAccess origin = access(gm, global, {}, std::vector<CExpr>(kept.size(), cconst(0)));
  const ElementAccess at = access(sm, tile, {}, std::vector<CExpr>(tile_kept.size(), cconst(0)));
  t.rank = static_cast<int>(origin.base.size());
  for (int d = t.rank - 1; d >= 0; --d)  // innermost first
    t.coords.push_back(origin.base[static_cast<size_t>(d)].text);
  t.shared = fmt::format("(unsigned)__cvta_generic_to_shared({} + ({}) * {})", sm.ptr, at.offset.text,
                         sm.dtype.bits() / 8);
  note(s, fmt::format("TMA {}{}-D box [{}] through {}{}",
                      s.inst->kind == ir::InstKind::StoreTma ? "store " : "", t.rank, fmt::join(box, ", "),
                      t.map, swizzle ? fmt::format(", {}-byte swizzle", swizzle) : ""));
  return t;
}

// The coordinates as asm operands %first, %first + 1, ... and their "r" bindings.
std::pair<std::string, std::string> Emitter::TmaOperands::coordinates(int first) const {
  std::string list, bindings;
  for (size_t k = 0; k < coords.size(); ++k) {
    list += fmt::format("{}%{}", k ? ", " : "", first + static_cast<int>(k));
    bindings += fmt::format(", \"r\"((int)({}))", coords[k]);
  }
  return {list, bindings};
}

// A CopyTma from a tiled global (the verifier's check_bulk_tile): no tensor map; thread 0 copies the tile's
// bytes as they lie with one bulk copy completing on the barrier. A tile off a tile corner, past the tensor's
// edge or misaligned (block-uniform) is copied element by element by every thread instead (0 outside the
// tensor, as the TMA fills), made visible to the async proxy too, and thread 0 then completes the
// transaction bytes the bulk copy would have brought, after a fence that orders the threads' stores first.
void Emitter::emit_bulk_copy(const ir::InstStmt& s, const ir::CopyTmaInst& c) {
  const MemTensor& dst = mem(c.dst.tensor);
  const MemTensor& src = mem(c.src.tensor);
  const layout::Index tile = src.layout->shape();
  const int B = dst.dtype.bits();
  const int64_t elements = src.layout->num_locals(), bytes = elements * B / 8;
  open("");
  const std::optional<TiledCopy> t = tiled_copy(*this, dst, c.dst, src, c.src, tile, 16);
  if (!t)
    unsupported(
        s, "the shared view does not store the tiled global's tile in its order (the verifier checks this)");
  note(s, fmt::format("a whole tile of a tiled global: one bulk copy of {} bytes as it lies in memory, "
                      "element by element where off a tile corner, past the edge or misaligned",
                      bytes));
  const std::string bar = fresh("tv_bar");
  line(fmt::format("const unsigned {} = {};", bar, barrier_address(c.barrier)));
  open(fmt::format("if ({})", t->condition));
  line(fmt::format(
      "if (t == 0) asm volatile(\"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], "
      "[%1], "
      "%2, [%3];\" :: \"r\"((unsigned)__cvta_generic_to_shared({} + ({}) * {} / 8)), \"l\"({} + {}), "
      "\"n\"({}), \"r\"({}) : \"memory\");",
      dst.ptr, t->dst_offset.text, B, src.ptr, t->src_bytes, bytes, bar));
  close("} else {");
  ++indent_;
  line("#pragma unroll 1");
  open(fmt::format("for (int c = t; c < {}; c += {})", elements, threads_));
  const std::vector<CExpr> idx = tile_index(tile, cvar("c"));
  const ElementAccess da = access(dst, c.dst, {}, idx), sa = access(src, c.src, {}, idx);
  line(fmt::format("tv_st<{}>({}, {}, ({}) ? tv_ld<{}>({}, {}) : 0ull);", B, dst.ptr, da.offset.text,
                   sa.inside, B, src.ptr, sa.offset.text));
  close();
  line("asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");  // the tile may go to wgmma");
  line(block_barrier());
  open("if (t == 0)");
  line("__threadfence_block();");
  line(fmt::format(
      "asm volatile(\"mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;\" :: \"r\"({}), \"n\"({}) : "
      "\"memory\");",
      bar, bytes));
  close();
  close();
  close();
}

void Emitter::emit_copy_tma(const ir::InstStmt& s, const ir::CopyTmaInst& c) {
  require_hopper(s);
  if (mem(c.src.tensor).layout) return emit_bulk_copy(s, c);
  const TmaOperands t = tma_operands(s, c.dst, c.src);
  if (c.multicast) {
    // The same tile into the same offset of each masked block's shared memory, completing on its barrier.
    const auto [coords, operands] = t.coordinates(4);
    line(fmt::format(
        "if (t == 0) asm "
        "volatile(\"cp.async.bulk.tensor.{}d.shared::cluster.global.tile.mbarrier::complete_tx::"
        "bytes.multicast::cluster [%0], [%1, {{{}}}], [%2], %3;\" :: \"r\"({}), \"l\"((unsigned long "
        "long)&{}), "
        "\"r\"({}), \"h\"((unsigned short)({})){} : \"memory\");",
        t.rank, coords, t.shared, t.map, barrier_address(c.barrier), int_expr(c.multicast).text, operands));
    return;
  }
  const auto [coords, operands] = t.coordinates(3);
  line(fmt::format(
      "if (t == 0) asm "
      "volatile(\"cp.async.bulk.tensor.{}d.shared::cluster.global.tile.mbarrier::complete_tx::"
      "bytes [%0], [%1, {{{}}}], [%2];\" :: \"r\"({}), \"l\"((unsigned long long)&{}), \"r\"({}){} : "
      "\"memory\");",
      t.rank, coords, t.shared, t.map, barrier_address(c.barrier), operands));
}

// A TMA store: issued by thread 0 of the block (or region) from the shared tile to the global view's origin
// through a tensor map of the destination (the accelerator clips the box at the tensor's edges), each in a
// bulk group of its own; StoreTmaWait(n) is that thread's wait for all but n of its groups to have read
// their tiles, then the block's (region's) barrier, so that every thread may write the tiles again. The
// threads' stores into the tile reach the async proxy through the fence that Synchronize() emits for
// tiles it reads (collect_wgmma_facts).
void Emitter::emit_store_tma(const ir::InstStmt& s, const ir::StoreTmaInst& c) {
  require_hopper(s);
  const TmaOperands t = tma_operands(s, c.src, c.dst);
  const auto [coords, operands] = t.coordinates(2);
  open("if (t == 0)");
  line(fmt::format(
      "asm volatile(\"cp.async.bulk.tensor.{}d.global.shared::cta.bulk_group [%0, {{{}}}], [%1];\" :: "
      "\"l\"((unsigned long long)&{}), \"r\"({}){} : \"memory\");",
      t.rank, coords, t.map, t.shared, operands));
  line("asm volatile(\"cp.async.bulk.commit_group;\" ::: \"memory\");");
  close();
}

// Every thread of every block of the cluster arrives and waits (release, then acquire: the blocks'
// earlier shared-memory writes and barrier initializations are visible to the others after it).
void Emitter::emit_cluster_sync(const ir::InstStmt& s) {
  require_hopper(s);
  line("asm volatile(\"barrier.cluster.arrive.release.aligned;\" ::: \"memory\");");
  line("asm volatile(\"barrier.cluster.wait.acquire.aligned;\" ::: \"memory\");");
}

void Emitter::emit_store_tma_wait(const ir::InstStmt& s, const ir::StoreTmaWaitInst& n) {
  require_hopper(s);
  line(fmt::format("if (t == 0) asm volatile(\"cp.async.bulk.wait_group.read {};\" ::: \"memory\");",
                   n.pending));
  line("__syncthreads();  // every thread may write the retired stores' tiles again");
}

}  // namespace tilevm::codegen::cuda
