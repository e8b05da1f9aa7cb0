// Lowering of Parallel loops to whole-tile instructions (lower_parallel.h).
#include "tilevm/tile/lower_parallel.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/mutator.h"
#include "tilevm/ir/printer.h"
#include "tilevm/support/error.h"
#include "tilevm/tile/parallel_binding.h"
#include "tilevm/tile/tile_layouts.h"
#include "tilevm/tile/tile_program.h"

namespace tilevm::tile {

namespace {

using ir::ElementwiseOp;
using ir::Scope;

// A value of the loop being lowered: a scalar, or a register tile of the loop's rank whose extents are 1 in
// the dimensions it does not follow.
struct Val {
  ir::Expr scalar;
  ir::Var tile;
  std::vector<int> dims;  // the loop dimensions the tile follows
  DataType dtype = DataType::f32();
  bool is_tile() const { return tile != nullptr; }
};

// The view of a memory access's tile: fixed indices select, and the loop dimensions start at their bases,
// which go to `offset` (left empty when all are 0). Trailing whole dimensions need no subscript.
ir::TensorArg memory_view(const BoundAccess& x, std::vector<ir::Expr>* offset) {
  ir::TensorArg view{x.access->tensor, {}, x.access->loc};
  bool zero = true;
  for (size_t d = 0; d < x.dims.size(); ++d) {
    if (x.dims[d] < 0) {
      view.slices.push_back(ir::Slice{ir::Slice::Kind::Index, x.offsets[d]});
    } else {
      view.slices.push_back(ir::Slice{ir::Slice::Kind::Full, nullptr});
      offset->push_back(x.offsets[d]);
      zero &= ir::as_const_int(x.offsets[d]) == 0;
    }
  }
  if (zero) offset->clear();
  while (!view.slices.empty() && view.slices.back().kind == ir::Slice::Kind::Full) view.slices.pop_back();
  return view;
}

// The dtype two operands compute in: the language's rule for binary operators (ir::binary_result_type: a
// float over an integer, the wider float, at equal integer width the signed one), except that two different
// floats of one width (f16 with bf16) compute in f32, since neither holds the other.
DataType wider(DataType a, DataType b) {
  if (a.is_float() && b.is_float() && a.bits() == b.bits() && a != b) return DataType::f32();
  return ir::binary_result_type(ir::BinaryOp::Add, a, b);
}

class Lowering : public ThreadsMutator {
 public:
  Lowering(int64_t threads, Diagnostics& diags) : ThreadsMutator(threads), diags_(diags) {}
  bool ok() const { return ok_; }

  ir::Block mutate_block(const ir::Block& block) override {
    ir::Block out;
    for (const ir::Stmt& s : block) {
      if (const auto* p = s ? s->as<ir::ParallelStmt>() : nullptr) {
        out_ = &out;
        lower(*p);
        out_ = nullptr;
        continue;
      }
      if (ir::Stmt m = mutate_stmt(s)) out.push_back(std::move(m));
    }
    return out;
  }

 private:
  void emit(ir::Inst inst, std::vector<ir::Var> results = {}) {
    const SourceLoc loc = inst->loc;
    out_->push_back(std::make_shared<ir::InstStmt>(std::move(results), std::move(inst), loc));
  }
  ir::Var temp(DataType dtype, const layout::Layout& lay) {
    return register_var(fmt::format("p_{}", counter_++), dtype, lay);
  }

  // The loop's layout reduced to `dims`, with extent 1 in the other dimensions.
  layout::Layout tile_layout(const std::vector<int>& dims) const {
    layout::Layout lay = access_layout(loop_, dims);
    for (int k = 0; k < loop_.rank(); ++k)
      if (std::find(dims.begin(), dims.end(), k) == dims.end()) lay = layout::insert_dim(lay, k);
    return lay;
  }

  void lower(const ir::ParallelStmt& p) {
    auto bound = bind_parallel(p, diags_);
    TILEVM_ASSERT(bound, "a Parallel loop that infer_layouts bound does not bind in lower_parallel");
    binding_ = &*bound;
    parallel_ = &p;
    loc_ = p.loc;
    // The loop's layout: its register tiles of the full shape share it (infer_layouts), else the free one.
    std::optional<layout::Layout> loop;
    bound->for_each_access([&](const BoundAccess& x) {
      if (!x.memory && x.full(bound->shape.size())) loop = x.access->tensor->type.tensor->layout;
      return !loop;
    });
    if (!loop) {
      std::string why;
      loop = free_loop_layout(*bound, threads_, &why);
      TILEVM_ASSERT(loop, "infer_layouts laid out a Parallel loop that free_loop_layout cannot: {}", why);
    }
    loop_ = *loop;
    loaded_.clear();
    iotas_.clear();
    std::set<const ir::VarNode*> read, written;  // memory tensors since the last barrier
    for (size_t k = 0; k < p.body.size(); ++k) {
      const ir::ElementAssign& a = p.body[k];
      const ParallelBinding::Assign& b = bound->body[k];
      bool hazard = false;
      for (const BoundAccess& r : b.reads) hazard |= r.memory && written.count(r.access->tensor.get());
      if (b.target.memory) {
        const ir::VarNode* t = b.target.access->tensor.get();
        hazard |= written.count(t) || read.count(t);
      }
      if (hazard) {
        emit(std::make_shared<ir::SynchronizeInst>(a.loc));
        read.clear();
        written.clear();
      }
      for (const BoundAccess& r : b.reads)
        if (r.memory) read.insert(r.access->tensor.get());
      reads_ = &b.reads;
      next_read_ = 0;
      std::optional<Val> v = eval(a.value);
      if (!v) return;
      assign(b.target, *v, a.loc);
      if (b.target.memory) {
        written.insert(b.target.access->tensor.get());
        // A later read of the tensor loads again.
        for (auto it = loaded_.begin(); it != loaded_.end();)
          it = it->second.first == b.target.access->tensor.get() ? loaded_.erase(it) : std::next(it);
      }
    }
  }

  std::optional<Val> eval(const ir::ElementExpr& e) {
    switch (e->kind) {
      case ir::ElementExprNode::Kind::Scalar:
        if (first_loop_variable(*parallel_, e->scalar)) return index_value(e->scalar, e);
        return Val{e->scalar, nullptr, {}, e->scalar->type};
      case ir::ElementExprNode::Kind::Access:
        return read((*reads_)[next_read_++]);
      case ir::ElementExprNode::Kind::Op:
        break;
    }
    std::vector<Val> args;
    for (const ir::ElementExpr& a : e->args) {
      std::optional<Val> v = eval(a);
      if (!v) return std::nullopt;
      args.push_back(*v);
    }
    return op(e->op, std::move(args), e);
  }

  // A scalar expression of the loop variables, per element: each loop variable an i32 Iota tile along its
  // dimension (made once per loop), its loop-invariant parts scalars, its operators elementwise instructions
  // (the binding admitted only those ir::element_binary_op maps). `whole` is the value's node, for messages.
  std::optional<Val> index_value(const ir::Expr& x, const ir::ElementExpr& whole) {
    if (!first_loop_variable(*parallel_, x)) return Val{x, nullptr, {}, x->type};
    const SourceLoc loc = x->loc.known() ? x->loc : whole->loc;
    if (const int k = loop_dimension(*parallel_, x); k >= 0) {
      ir::Var& v = iotas_[k];
      if (!v) {
        const layout::Layout lay = tile_layout({k});
        v = temp(DataType::i32(), lay);
        emit(std::make_shared<ir::IotaInst>(DataType::i32(), lay, k, loc), {v});
      }
      return Val{nullptr, v, {k}, DataType::i32()};
    }
    ElementwiseOp o = ElementwiseOp::Neg;
    std::vector<ir::Expr> operands;
    if (const auto* b = x->as<ir::BinaryExpr>()) {
      const std::optional<ElementwiseOp> mapped = ir::element_binary_op(b->op);
      TILEVM_ASSERT(mapped, "an index value's operator {} passed the binding", ir::to_string(b->op));
      o = *mapped;
      operands = {b->a, b->b};
    } else {
      const auto* u = x->as<ir::UnaryExpr>();
      TILEVM_ASSERT(u && u->op == ir::UnaryOp::Neg, "an index value `{}` passed the binding",
                    ir::print_expr(x));
      operands = {u->a};
    }
    // The scalar expression's own operand type (ir::binary_result_type: an i64 argument makes `j < n` an
    // i64 comparison, an f16 one `j * h` an f16 product); the Iota tiles are i32 and convert to it.
    const DataType promoted =
        operands.size() == 2 ? ir::binary_result_type(ir::BinaryOp::Add, operands[0]->type, operands[1]->type)
                             : operands[0]->type;
    std::vector<Val> args;
    for (const ir::Expr& a : operands) {
      std::optional<Val> v = index_value(a, whole);
      if (!v) return std::nullopt;
      args.push_back(converted(*v, promoted, loc));
    }
    return op(o, std::move(args), ir::make_element_scalar(x, loc));
  }

  // A read: a register tile as it is (viewed with extent 1 in the loop dimensions it does not follow), a
  // memory tile loaded in the loop's layout.
  Val read(const BoundAccess& x) {
    const ir::Var& t = x.access->tensor;
    const DataType dtype = t->type.tensor->dtype;
    const std::vector<int> dims = x.loop_dims();
    const bool full = dims.size() == binding_->shape.size();
    if (!x.memory) {
      if (full) return Val{nullptr, t, dims, dtype};
      const std::string key = t->name + "#" + fmt::format("{}", fmt::join(dims, ","));
      if (auto it = loaded_.find(key); it != loaded_.end())
        return Val{nullptr, it->second.second, dims, dtype};
      const layout::Layout lay = tile_layout(dims);
      ir::Var v = temp(dtype, lay);
      emit(std::make_shared<ir::ViewInst>(whole(t, x.access->loc), std::nullopt, lay, x.access->loc), {v});
      loaded_[key] = {t.get(), v};
      return Val{nullptr, v, dims, dtype};
    }
    const std::string key = ir::print_element_access(*x.access);
    if (auto it = loaded_.find(key); it != loaded_.end()) return Val{nullptr, it->second.second, dims, dtype};
    std::vector<ir::Expr> offset;
    const ir::TensorArg view = memory_view(x, &offset);
    const layout::Layout lay = access_layout(loop_, dims);
    ir::Var r = temp(dtype, lay);
    if (t->type.tensor->scope == Scope::Global)
      emit(std::make_shared<ir::LoadGlobalInst>(view, lay, offset, nullptr, x.access->loc), {r});
    else
      emit(std::make_shared<ir::LoadSharedInst>(view, lay, offset, nullptr, x.access->loc), {r});
    if (!full) {
      const layout::Layout viewed = tile_layout(dims);
      ir::Var v = temp(dtype, viewed);
      emit(std::make_shared<ir::ViewInst>(whole(r, x.access->loc), std::nullopt, viewed, x.access->loc), {v});
      r = v;
    }
    loaded_[key] = {t.get(), r};
    return Val{nullptr, r, dims, dtype};
  }

  // `v` as a tile of `dtype` (a Cast when it is not).
  Val converted(const Val& v, DataType dtype, SourceLoc loc) {
    if (!v.is_tile() || v.dtype == dtype) return v;
    ir::Var c = temp(dtype, *v.tile->type.tensor->layout);
    emit(std::make_shared<ir::CastInst>(whole(v.tile, loc), dtype, nullptr, loc), {c});
    return Val{nullptr, c, v.dims, dtype};
  }

  // `v` following every dimension of `dims` (a broadcast by adding to a zero tile when it follows fewer:
  // -0.0 for floats, the one zero that leaves every value as it is, -0.0 included).
  Val widened(const Val& v, const std::vector<int>& dims, SourceLoc loc) {
    if (v.is_tile() && v.dims.size() == dims.size()) return v;
    if (v.is_tile() && v.dtype == DataType::boolean()) {
      // No arithmetic on bool: widen its u8 form and compare with 0.
      const Val w = widened(converted(v, DataType::u8(), loc), dims, loc);
      ir::Var r = temp(DataType::boolean(), *w.tile->type.tensor->layout);
      emit(std::make_shared<ir::ElementwiseInst>(
               ElementwiseOp::Ne,
               std::vector<ir::Operand>{{ir::TensorArg{w.tile, {}, loc}, nullptr},
                                        {std::nullopt, ir::make_int(0)}},
               nullptr, loc),
           {r});
      return Val{nullptr, r, dims, DataType::boolean()};
    }
    const layout::Layout lay = tile_layout(dims);
    ir::Var z = temp(v.dtype, lay);
    const bool is_float = v.dtype.is_float();
    emit(std::make_shared<ir::AllocateRegisterInst>(
             v.dtype, lay, v.is_tile() ? (is_float ? ir::make_float(-0.0) : ir::make_int(0)) : v.scalar, loc),
         {z});
    if (!v.is_tile()) return Val{nullptr, z, dims, v.dtype};
    ir::Var s = temp(v.dtype, lay);
    emit(std::make_shared<ir::ElementwiseInst>(
             ElementwiseOp::Add,
             std::vector<ir::Operand>{{ir::TensorArg{z, {}, loc}, nullptr},
                                      {ir::TensorArg{v.tile, {}, loc}, nullptr}},
             nullptr, loc),
         {s});
    return Val{nullptr, s, dims, v.dtype};
  }

  std::optional<Val> op(ElementwiseOp o, std::vector<Val> args, const ir::ElementExpr& e) {
    const SourceLoc loc = e->loc.known() ? e->loc : loc_;
    // The dtype to compute in: the wider of the tiles' (a Where's condition aside), float for float scalars
    // and float functions.
    const size_t first = o == ElementwiseOp::Where ? 1 : 0;
    std::optional<DataType> dtype;
    bool float_scalar = false;
    std::vector<int> dims;
    for (size_t k = 0; k < args.size(); ++k) {
      const Val& a = args[k];
      if (a.is_tile()) {
        for (int d : a.dims)
          if (std::find(dims.begin(), dims.end(), d) == dims.end()) dims.push_back(d);
      }
      if (k < first) continue;
      if (a.is_tile())
        dtype = dtype ? wider(*dtype, a.dtype) : a.dtype;
      else
        float_scalar |= a.dtype.is_float();
    }
    std::sort(dims.begin(), dims.end());
    if (dims.empty()) {
      diags_.error(loc, "Parallel: `{}` has no element operand to compute on; compute it before the loop",
                   ir::print_element_expr(e));
      ok_ = false;
      return std::nullopt;
    }
    if (!dtype) dtype = DataType::f32();  // Where of two scalars by a tile condition
    if ((float_scalar || ir::is_float_only(o)) && !dtype->is_float()) dtype = DataType::f32();
    if (o == ElementwiseOp::Fma && dtype->bits() < 32) dtype = DataType::f32();
    // A scalar converts to the tiles' dtype in the instruction (an integer scalar into a float one).
    std::vector<ir::Operand> operands;
    bool owner = false;  // some operand has the result's shape (the VM takes its layout)
    for (size_t k = 0; k < args.size(); ++k) {
      Val a = k < first ? args[k] : converted(args[k], *dtype, loc);
      // (A Where's condition gives its shape but not the values' dtype: it cannot be the owner.)
      owner |= k >= first && a.is_tile() && a.dims.size() == dims.size();
      args[k] = a;
    }
    if (!owner) {
      // A scalar widened into the result's shape takes the computation's dtype (an i32 literal beside f32
      // tiles becomes an f32 tile, as the instruction would have converted it).
      if (!args[first].is_tile()) args[first].dtype = *dtype;
      args[first] = widened(args[first], dims, loc);
    }
    for (const Val& a : args) {
      if (a.is_tile())
        operands.push_back({ir::TensorArg{a.tile, {}, loc}, nullptr});
      else
        operands.push_back({std::nullopt, a.scalar});
    }
    const DataType result = ir::is_comparison(o) ? DataType::boolean() : *dtype;
    ir::Var r = temp(result, tile_layout(dims));
    emit(std::make_shared<ir::ElementwiseInst>(o, std::move(operands), nullptr, loc), {r});
    return Val{nullptr, r, dims, result};
  }

  void assign(const BoundAccess& target, Val v, SourceLoc loc) {
    const ir::Var& t = target.access->tensor;
    const DataType dtype = t->type.tensor->dtype;
    const size_t rank = binding_->shape.size();
    std::vector<int> all(rank);
    for (size_t k = 0; k < rank; ++k) all[k] = static_cast<int>(k);
    if (!v.is_tile()) {  // a scalar for every element
      const layout::Layout lay = target.memory ? access_layout(loop_, all) : *t->type.tensor->layout;
      ir::Var z = temp(dtype, lay);
      emit(std::make_shared<ir::AllocateRegisterInst>(dtype, lay, v.scalar, loc), {z});
      v = Val{nullptr, z, all, dtype};
    } else {
      v = widened(v, all, loc);
    }
    if (!target.memory) {
      emit(std::make_shared<ir::CastInst>(whole(v.tile, loc), dtype, t, loc));
      return;
    }
    v = converted(v, dtype, loc);
    std::vector<ir::Expr> offset;
    const ir::TensorArg view = memory_view(target, &offset);
    if (t->type.tensor->scope == Scope::Global)
      emit(std::make_shared<ir::StoreGlobalInst>(whole(v.tile, loc), view, offset, loc));
    else
      emit(std::make_shared<ir::StoreSharedInst>(whole(v.tile, loc), view, offset, loc));
  }

  Diagnostics& diags_;
  bool ok_ = true;
  ir::Block* out_ = nullptr;
  int counter_ = 0;
  const ParallelBinding* binding_ = nullptr;
  const ir::ParallelStmt* parallel_ = nullptr;
  const std::vector<BoundAccess>* reads_ = nullptr;
  size_t next_read_ = 0;
  layout::Layout loop_;
  SourceLoc loc_;
  // Tiles this loop already read (memory loads, register views), by access: the tensor and the tile.
  std::map<std::string, std::pair<const ir::VarNode*, ir::Var>> loaded_;
  // The Iota tile of each loop dimension used as a value, made once per loop.
  std::map<int, ir::Var> iotas_;
};

}  // namespace

std::optional<ir::Program> lower_parallel(ir::Program program, Diagnostics& diags, const target::Target&) {
  if (!uses_tile_operators(program)) return program;
  Lowering lowering(program.threads, diags);
  ir::Program out = lowering.mutate_program(program);
  if (!lowering.ok()) return std::nullopt;
  return out;
}

}  // namespace tilevm::tile
