// Lowering of the tile operators to VM instructions (lower_tile_ops.h).
#include "tilevm/tile/lower_tile_ops.h"

#include <fmt/format.h>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/mutator.h"
#include "tilevm/support/error.h"
#include "tilevm/tile/tile_layouts.h"
#include "tilevm/tile/tile_program.h"

namespace tilevm::tile {

namespace {

using ir::Scope;

class Lower : public ThreadsMutator {
 public:
  Lower(int64_t threads, const target::Target& target, Diagnostics& diags)
      : ThreadsMutator(threads), target_(target), diags_(diags) {}
  bool ok() const { return ok_; }

  ir::Block mutate_block(const ir::Block& block) override {
    ir::Block out;
    for (const ir::Stmt& s : block) {
      const auto* is = s ? s->as<ir::InstStmt>() : nullptr;
      if (!is || !is->inst || !ir::is_tile_operator(is->inst->kind)) {
        if (ir::Stmt m = mutate_stmt(s)) out.push_back(std::move(m));
        continue;
      }
      const ir::Inst inst = mutate_inst(is->inst);  // operands retyped, expressions folded
      out_ = &out;
      if (const auto* c = inst->as<ir::CopyInst>())
        lower_copy(*c);
      else if (const auto* g = inst->as<ir::GemmInst>())
        lower_gemm(*g);
      else if (const auto* f = inst->as<ir::FillInst>())
        lower_fill(*f);
      else if (const auto* a = inst->as<ir::AtomicAddInst>())
        lower_atomic_add(*a);
      else if (const auto* r = inst->as<ir::RasterizeInst>())
        lower_rasterize(*r, is->results);
      else
        throw InternalError(
            fmt::format("{} reached lower_tile_ops: infer_layouts allocates fragments", inst->name()));
      out_ = nullptr;
    }
    return out;
  }

 private:
  void emit(ir::Inst inst, std::vector<ir::Var> results = {}) {
    const SourceLoc loc = inst->loc;
    out_->push_back(std::make_shared<ir::InstStmt>(std::move(results), std::move(inst), loc));
  }
  std::string fresh(const std::string& base) { return fmt::format("{}_{}", base, counter_++); }

  std::optional<layout::Layout> moving_layout(const layout::Index& shape, DataType dtype, SourceLoc loc) {
    std::string why;
    auto lay = copy_layout(shape, dtype, threads_, &why);
    if (!lay) {
      diags_.error(loc, "Copy: {}", why);
      ok_ = false;
    }
    return lay;
  }

  // A register tile of `src` converted to `dtype` (the tile itself when the dtypes agree).
  ir::TensorArg converted(const ir::TensorArg& src, DataType dtype, SourceLoc loc) {
    if (src.type().dtype == dtype) return src;
    ir::Var t = register_var(fresh(src.tensor->name + "_cast"), dtype, *src.type().layout);
    emit(std::make_shared<ir::CastInst>(src, dtype, nullptr, loc), {t});
    return whole(t, loc);
  }

  void store(const ir::TensorArg& r, const ir::TensorArg& dst, SourceLoc loc) {
    const ir::TensorArg v = converted(r, dst.type().dtype, loc);
    if (dst.type().scope == Scope::Global)
      emit(std::make_shared<ir::StoreGlobalInst>(v, dst, std::vector<ir::Expr>{}, loc));
    else
      emit(std::make_shared<ir::StoreSharedInst>(v, dst, std::vector<ir::Expr>{}, loc));
  }

  // A load of `src` (global or shared) in layout `lay`: into `into` when given (converting when the dtypes
  // differ), else into a new register tile, which is returned.
  ir::TensorArg load(const ir::TensorArg& src, const layout::Layout& lay, const ir::Var& into,
                     SourceLoc loc) {
    const DataType dtype = src.type().dtype;
    const bool direct = into && into->type.tensor->dtype == dtype;
    ir::Var r = direct ? nullptr : register_var(fresh(src.tensor->name + "_tile"), dtype, lay);
    ir::Inst inst;
    if (src.type().scope == Scope::Global)
      inst = std::make_shared<ir::LoadGlobalInst>(src, lay, std::vector<ir::Expr>{}, direct ? into : nullptr,
                                                  loc);
    else
      inst = std::make_shared<ir::LoadSharedInst>(src, lay, std::vector<ir::Expr>{}, direct ? into : nullptr,
                                                  loc);
    emit(inst, direct ? std::vector<ir::Var>{} : std::vector<ir::Var>{r});
    if (direct) return whole(into, loc);
    if (into) {
      emit(std::make_shared<ir::CastInst>(whole(r, loc), into->type.tensor->dtype, into, loc));
      return whole(into, loc);
    }
    return whole(r, loc);
  }

  void lower_copy(const ir::CopyInst& c) {
    const Scope s = c.src.type().scope, d = c.dst.type().scope;
    if (s == Scope::Register && d == Scope::Register) {
      emit(std::make_shared<ir::CastInst>(c.src, c.dst.type().dtype, c.dst.tensor, c.loc));
    } else if (s == Scope::Register) {
      store(c.src, c.dst, c.loc);
    } else if (d == Scope::Register) {
      load(c.src, *c.dst.type().layout, c.dst.tensor, c.loc);
    } else if (stored_by_tma(c)) {
      // One thread issues the TMA store of the whole tile (insert_barriers put the Synchronize that orders
      // the threads' writes of it before, with the proxy fence); waiting for its reads at once leaves the
      // tile free for whatever writes it next, while the global writes complete on their own.
      emit(std::make_shared<ir::StoreTmaInst>(c.src, c.dst, c.loc));
      emit(std::make_shared<ir::StoreTmaWaitInst>(0, c.loc));
    } else {
      // Between memories through registers, in the coalesced layout of the non-global side's tile.
      const ir::TensorArg& tile_side = s == Scope::Global ? c.dst : c.src;
      auto lay = moving_layout(tile_shape(tile_side), c.src.type().dtype, c.loc);
      if (!lay) return;
      store(load(c.src, *lay, nullptr, c.loc), c.dst, c.loc);
    }
  }

  // Copy(shared, global) on Hopper where the TMA stores the whole shared tile (no subscript) in one box
  // (tma_tile), into a strided rank-2 global view of the same dtype (not a layout=, unit inner stride) whose
  // row stride is a constant multiple of 16 bytes. A tensor map needs that, and the runtime encodes the
  // kernel's tensor maps at every launch: a stride known only at run time could fail the launch of a
  // kernel that would not even take the TMA's path.
  bool stored_by_tma(const ir::CopyInst& c) const {
    const ir::TensorType& t = c.src.type();
    const ir::TensorType& g = c.dst.type();
    if (!target_.features.hopper || t.scope != Scope::Shared || g.scope != Scope::Global ||
        !c.src.slices.empty() || t.dtype != g.dtype || g.layout || g.rank() != 2)
      return false;
    for (const ir::Slice& sl : c.dst.slices)
      if (sl.kind == ir::Slice::Kind::Index) return false;
    const auto shape = t.static_shape();
    if (!shape || !t.layout || !tma_tile(*shape, t.dtype, *t.layout, /*swizzled=*/false)) return false;
    if (!g.strides.empty() && ir::as_const_int(g.strides[1]) != std::optional<int64_t>(1)) return false;
    const std::optional<int64_t> row = ir::as_const_int(g.strides.empty() ? g.shape[1] : g.strides[0]);
    return row && *row * t.dtype.bits() % 128 == 0;
  }

  // A register tile adds in its own layout (converted to the destination's dtype); a shared one through
  // registers in the coalesced layout.
  void lower_atomic_add(const ir::AtomicAddInst& a) {
    ir::TensorArg src = a.src;
    if (src.type().scope == Scope::Shared) {
      auto lay = moving_layout(tile_shape(src), src.type().dtype, a.loc);
      if (!lay) return;
      src = load(src, *lay, nullptr, a.loc);
    }
    const ir::TensorArg v = converted(src, a.dst.type().dtype, a.loc);
    emit(std::make_shared<ir::AtomicAddGlobalInst>(v, a.dst, std::vector<ir::Expr>{}, a.loc));
  }

  void lower_gemm(const ir::GemmInst& g) {
    const layout::Index cs = tile_shape(g.c), as = tile_shape(g.a);
    const int64_t m = cs[0], n = cs[1], k = g.transpose_a ? as[0] : as[1];
    // infer_layouts recorded its choice in wgmma=: one Dot on the shared tiles.
    if (g.wgmma.value_or(false)) {
      emit(std::make_shared<ir::DotInst>(g.a, g.b, g.c, g.c.tensor, g.loc, g.transpose_a, g.transpose_b));
      return;
    }
    std::string why;
    auto w = gemm_warp_partition(m, n, threads_ / 32, &why);
    if (!w)
      throw InternalError("lower_tile_ops: a Gemm without a warp partition passed infer_layouts: " + why);
    const bool a_shared = g.a.type().scope == Scope::Shared, b_shared = g.b.type().scope == Scope::Shared;
    // Both operands in shared memory: K in slices of 16 (one mma step), so that the operands take few
    // registers beside the accumulator (a 128 x 128 tile over 4 warps spilled with slices of 32).
    const int64_t ks = a_shared && b_shared ? 16 : k;
    ir::Block body;
    ir::Block* outer = out_;
    ir::Var kk;
    if (k / ks > 1) {
      kk = ir::make_var(fresh("kk"), ir::ValueType::scalar(DataType::i32()));
      out_ = &body;
    }
    const ir::Expr k0 =
        kk ? ir::make_binary(ir::BinaryOp::Mul, ir::make_var_ref(kk), ir::make_int(ks)) : ir::make_int(0);
    auto operand = [&](const ir::TensorArg& x, bool shared, layout::Layout lay, bool transposed, bool k_first,
                       const char* role) -> ir::TensorArg {
      if (!shared) return x;
      if (transposed) lay = layout::transpose(lay);
      // The slice's offset along K: K is the first dimension of a transposed a and of a plain b.
      std::vector<ir::Expr> offset = k_first != transposed ? std::vector<ir::Expr>{k0, ir::make_int(0)}
                                                           : std::vector<ir::Expr>{ir::make_int(0), k0};
      ir::Var r = register_var(fresh(x.tensor->name + "_" + role), x.type().dtype, lay);
      emit(
          std::make_shared<ir::LoadSharedInst>(x, lay, kk ? offset : std::vector<ir::Expr>{}, nullptr, g.loc),
          {r});
      return whole(r, g.loc);
    };
    const ir::TensorArg a = operand(g.a, a_shared, gemm_a_layout(m, ks, *w), g.transpose_a, false, "a");
    const ir::TensorArg b = operand(g.b, b_shared, gemm_b_layout(ks, n, *w), g.transpose_b, true, "b");
    emit(std::make_shared<ir::DotInst>(a, b, g.c, g.c.tensor, g.loc, g.transpose_a, g.transpose_b));
    if (kk) {
      out_ = outer;
      out_->push_back(std::make_shared<ir::ForStmt>(kk, ir::make_int(0), ir::make_int(k / ks),
                                                    ir::make_int(1), std::move(body), g.loc,
                                                    ir::LoopAttrs{.unroll = 0}));
    }
  }

  // bm, bn = Rasterize(pid, rows=R, cols=C, group=G) as scalar arithmetic: pid's group of G rows of tiles
  // (G * C blocks each; the last group may have fewer rows), then its place in the group, rows first.
  void lower_rasterize(const ir::RasterizeInst& r, const std::vector<ir::Var>& results) {
    auto bin = [&](ir::BinaryOp op, const ir::Expr& a, const ir::Expr& b) {
      return ir::make_binary(op, a, b, r.loc);
    };
    auto define = [&](const std::string& base, ir::Expr value, ir::Var var = nullptr) {
      if (!var) var = ir::make_var(fresh(base), ir::ValueType::scalar(DataType::i32()), r.loc);
      out_->push_back(std::make_shared<ir::AssignStmt>(var, std::move(value), true, r.loc));
      return ir::make_var_ref(var, r.loc);
    };
    if (results.size() != 2) return;  // a bare Rasterize(...): nothing reads its values
    // pid is read twice: a computed one is evaluated once.
    const ir::Expr pid = r.pid->kind == ir::ExprKind::VarRef ? r.pid : define("pid", r.pid);
    const ir::Expr per_group = define("per_group", bin(ir::BinaryOp::Mul, r.group, r.cols));
    const ir::Expr first =
        define("first", bin(ir::BinaryOp::Mul, bin(ir::BinaryOp::Div, pid, per_group), r.group));
    const ir::Expr here =
        define("rows_here", bin(ir::BinaryOp::Min, bin(ir::BinaryOp::Sub, r.rows, first), r.group));
    const ir::Expr in_group = define("in_group", bin(ir::BinaryOp::Mod, pid, per_group));
    define("", bin(ir::BinaryOp::Add, first, bin(ir::BinaryOp::Mod, in_group, here)), results[0]);
    define("", bin(ir::BinaryOp::Div, in_group, here), results[1]);
  }

  void lower_fill(const ir::FillInst& f) {
    const ir::TensorType& t = f.dst.type();
    // Directly after the fragment's allocation: its init.
    if (!out_->empty()) {
      const auto* prev = out_->back()->as<ir::InstStmt>();
      const auto* alloc = prev ? prev->inst->as<ir::AllocateRegisterInst>() : nullptr;
      if (alloc && !alloc->init && prev->results.size() == 1 && prev->results[0] == f.dst.tensor) {
        auto inst =
            std::make_shared<ir::AllocateRegisterInst>(alloc->dtype, alloc->layout, f.value, alloc->loc);
        out_->back() = std::make_shared<ir::InstStmt>(prev->results, inst, prev->loc);
        return;
      }
    }
    ir::Var v = register_var(fresh(f.dst.tensor->name + "_fill"), t.dtype, *t.layout);
    emit(std::make_shared<ir::AllocateRegisterInst>(t.dtype, *t.layout, f.value, f.loc), {v});
    emit(std::make_shared<ir::CastInst>(whole(v, f.loc), t.dtype, f.dst.tensor, f.loc));
  }

  const target::Target& target_;
  Diagnostics& diags_;
  bool ok_ = true;
  ir::Block* out_ = nullptr;
  int counter_ = 0;
};

}  // namespace

// The target decides one choice here (Copy(shared, global) as a TMA store on Hopper); infer_layouts already
// wrote the wgmma choice into each Gemm.
std::optional<ir::Program> lower_tile_ops(ir::Program program, Diagnostics& diags,
                                          const target::Target& target) {
  if (!uses_tile_operators(program)) return program;
  Lower lower(program.threads, target, diags);
  ir::Program out = lower.mutate_program(program);
  if (!lower.ok()) return std::nullopt;
  return out;
}

}  // namespace tilevm::tile
