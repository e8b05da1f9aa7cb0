// The tile layer's operators (inst/tile.h): scopes, shapes and dtypes. Their layouts are the tile layer's
// to infer (src/tile/), so nothing here reads a fragment's layout.
#include <fmt/format.h>
#include "tilevm/target/limits.h"
#include "verifier_impl.h"

namespace tilevm::ir::verifier_detail {

namespace {

bool is_gemm_input(DataType t) {
  return t == DataType::f16() || t == DataType::bf16();
}

}  // namespace

void Verifier::check_allocate_fragment(const AllocateFragmentInst& n) {
  if (n.shape.empty())
    diags_.error(n.loc, "AllocateFragment: shape= has no extents; a fragment has rank 1 or more");
  // The fragment lives in the block's registers, so its bits are bounded by the register file's, whatever
  // layout is inferred (the product is kept below that bound as it is formed: extents may be near 2^63).
  const int64_t max_elements = target::kRegisterFileBits / std::max(1, n.dtype.bits());
  int64_t elements = 1;
  bool all_known = true;
  for (const Expr& e : n.shape) {
    check_int_expr(e, n.loc, "a fragment extent");
    auto c = as_const_int(e);
    all_known = all_known && c && *c >= 1;
    if (!c)
      diags_.error(pick(e ? e->loc : SourceLoc{}, n.loc), "AllocateFragment: extent {} is not a constant",
                   expr_text(e));
    else if (*c < 1)
      diags_.error(pick(e->loc, n.loc), "AllocateFragment: extent {} is {}; extents must be positive",
                   expr_text(e), *c);
    else
      elements = *c > max_elements / elements ? max_elements + 1 : elements * *c;
  }
  if (all_known && elements > max_elements)
    diags_.error(n.loc,
                 "AllocateFragment: a {} fragment of {} is larger than a block's registers can hold ({} "
                 "bits: at most {} elements of {} bits)",
                 shape_text(n.shape), n.dtype.name(), target::kRegisterFileBits, max_elements,
                 n.dtype.bits());
  if (n.init) {
    auto t = check_expr(n.init, n.loc);
    if (t && !scalar_fits(*t, n.dtype))
      diags_.error(pick(n.init->loc, n.loc), "AllocateFragment: init is {} ({}) but the fragment is {}",
                   t->name(), expr_text(n.init), n.dtype.name());
  }
}

void Verifier::check_copy(const CopyInst& n) {
  const TensorType* src = tensor_operand(n.src, n, "the source");
  const TensorType* dst = tensor_operand(n.dst, n, "the destination");
  if (!src || !dst) return;
  for (auto [t, arg] : {std::pair{src, &n.src}, std::pair{dst, &n.dst}}) {
    if (t->scope == Scope::Barrier) {
      diags_.error(pick(arg->loc, n.loc), "Copy: '{}' is a barrier; only the barrier instructions take it",
                   arg->tensor->name);
      return;
    }
  }
  if (src->scope == Scope::Global && dst->scope == Scope::Global) {
    diags_.error(n.loc, "Copy: '{}' and '{}' are both global; one side must be a shared or register tile",
                 n.src.tensor->name, n.dst.tensor->name);
    return;
  }
  // The tile is the non-global side; a global view must have at least its rank (it addresses the trailing
  // dimensions).
  const bool src_tile = src->scope != Scope::Global;
  const std::optional<layout::Index> tile = (src_tile ? n.src : n.dst).static_view_shape();
  if (!tile) return;  // the allocation reported it
  if (src->scope != Scope::Global && dst->scope != Scope::Global) {
    const std::optional<layout::Index> other = n.dst.static_view_shape();
    if (other && *other != *tile)
      diags_.error(n.loc, "Copy: '{}' is {} but '{}' is {}; tiles of both sides must have one shape",
                   n.src.tensor->name, index_text(*tile), n.dst.tensor->name, index_text(*other));
    return;
  }
  const TensorArg& global = src_tile ? n.dst : n.src;
  const std::vector<Expr> global_shape = view_shape(global, global.type());
  if (global_shape.size() < tile->size())
    diags_.error(n.loc, "Copy: the tile is {} (rank {}) but the global view '{}' has rank {}",
                 index_text(*tile), tile->size(), global.tensor->name, global_shape.size());
}

void Verifier::check_gemm(const GemmInst& n) {
  const TensorType* a = tensor_operand(n.a, n, "a");
  const TensorType* b = tensor_operand(n.b, n, "b");
  const TensorType* c = tensor_operand(n.c, n, "c");
  if (!a || !b || !c) return;
  for (auto [t, arg, role] : {std::tuple{a, &n.a, "a"}, std::tuple{b, &n.b, "b"}}) {
    if (t->scope != Scope::Shared && t->scope != Scope::Register) {
      diags_.error(pick(arg->loc, n.loc), "Gemm: {} must be a shared or register tile, '{}' is {}", role,
                   arg->tensor->name, type_text(arg->tensor->type));
      return;
    }
  }
  if (c->scope != Scope::Register) {
    diags_.error(pick(n.c.loc, n.loc), "Gemm: c must be a register tile (a fragment), '{}' is {}",
                 n.c.tensor->name, type_text(n.c.tensor->type));
    return;
  }
  auto as = n.a.static_view_shape(), bs = n.b.static_view_shape(), cs = n.c.static_view_shape();
  if (!as || !bs || !cs) return;
  for (auto [s, arg, role] :
       {std::tuple{&*as, &n.a, "a"}, std::tuple{&*bs, &n.b, "b"}, std::tuple{&*cs, &n.c, "c"}}) {
    if (s->size() != 2) {
      diags_.error(pick(arg->loc, n.loc),
                   "Gemm: {} ('{}') is {}; Gemm takes rank-2 tiles (index a stage with t[s])", role,
                   arg->tensor->name, index_text(*s));
      return;
    }
  }
  const int64_t m = n.transpose_a ? (*as)[1] : (*as)[0], ka = n.transpose_a ? (*as)[0] : (*as)[1];
  const int64_t kb = n.transpose_b ? (*bs)[1] : (*bs)[0], nb = n.transpose_b ? (*bs)[0] : (*bs)[1];
  if (ka != kb || (*cs)[0] != m || (*cs)[1] != nb)
    diags_.error(
        n.loc, "Gemm: shapes do not chain: a{} is {}, b{} is {}, c is {} (want [M, K] @ [K, N] into [M, N])",
        n.transpose_a ? "^T" : "", index_text({m, ka}), n.transpose_b ? "^T" : "", index_text({kb, nb}),
        index_text(*cs));
  if (a->dtype != b->dtype || !is_gemm_input(a->dtype))
    diags_.error(n.loc, "Gemm: a is {} and b is {}; Gemm multiplies f16 or bf16 tiles of one type",
                 a->dtype.name(), b->dtype.name());
  else if (!(c->dtype == DataType::f32() || (c->dtype == DataType::f16() && a->dtype == DataType::f16())))
    diags_.error(n.loc, "Gemm: c is {}; a {} product accumulates into f32{}", c->dtype.name(),
                 a->dtype.name(), a->dtype == DataType::f16() ? " or f16" : "");
}

void Verifier::check_fill(const FillInst& n) {
  const TensorType* dst = scoped_operand(n.dst, n, "the destination", Scope::Register);
  if (!n.value) {
    diags_.error(n.loc, "Fill: the value is missing");
    return;
  }
  auto t = check_expr(n.value, n.loc);
  if (dst && t && !scalar_fits(*t, dst->dtype))
    diags_.error(pick(n.value->loc, n.loc), "Fill: the value is {} ({}) but '{}' is {}", t->name(),
                 expr_text(n.value), n.dst.tensor->name, dst->dtype.name());
}

void Verifier::check_rasterize(const RasterizeInst& n) {
  const std::pair<const Expr*, const char*> operands[] = {
      {&n.pid, "the block index"}, {&n.rows, "rows="}, {&n.cols, "cols="}, {&n.group, "group="}};
  for (const auto& [e, what] : operands) {
    if (!*e) {
      diags_.error(n.loc, "Rasterize: {} is missing", what);
      continue;
    }
    // i32, as BlockIndices() gives: the results are i32 and the arithmetic stays in one type.
    if (std::optional<DataType> t = check_expr(*e, n.loc); t && *t != DataType::i32())
      diags_.error(pick((*e)->loc, n.loc),
                   "Rasterize: {} is {} ({}); it takes i32 values, as BlockIndices() gives", what, t->name(),
                   expr_text(*e));
    // The grid's extents and the group are counts: a constant one must be positive.
    if (e != &n.pid)
      if (std::optional<int64_t> v = as_const_int(*e); v && *v <= 0)
        diags_.error(pick((*e)->loc, n.loc), "Rasterize: {} is {}; it must be at least 1", what, *v);
  }
}

void Verifier::check_atomic_add(const AtomicAddInst& n) {
  const TensorType* src = tensor_operand(n.src, n, "the source");
  const TensorType* dst = tensor_operand(n.dst, n, "the destination");
  if (!src || !dst) return;
  if (src->scope != Scope::Register && src->scope != Scope::Shared) {
    diags_.error(pick(n.src.loc, n.loc),
                 "AtomicAdd: the source must be a register or shared tile, '{}' is {}", n.src.tensor->name,
                 type_text(n.src.tensor->type));
    return;
  }
  if (dst->scope != Scope::Global) {
    diags_.error(pick(n.dst.loc, n.loc), "AtomicAdd: the destination must be a global view, '{}' is {}",
                 n.dst.tensor->name, type_text(n.dst.tensor->type));
    return;
  }
  if (!dst->dtype.is_float() && !dst->dtype.is_integer())
    diags_.error(n.loc, "AtomicAdd: '{}' is {}; atomic addition needs a number type", n.dst.tensor->name,
                 dst->dtype.name());
  const std::optional<layout::Index> tile = n.src.static_view_shape();
  if (!tile) return;
  const std::vector<Expr> global_shape = view_shape(n.dst, *dst);
  if (global_shape.size() < tile->size())
    diags_.error(n.loc, "AtomicAdd: the tile is {} (rank {}) but the global view '{}' has rank {}",
                 index_text(*tile), tile->size(), n.dst.tensor->name, global_shape.size());
}

void Verifier::check_parallel(const ParallelStmt& n) {
  if (n.vars.size() != n.extents.size() || n.vars.empty()) {
    diags_.error(n.loc, "Parallel: {} loop variables for {} extents", n.vars.size(), n.extents.size());
    return;
  }
  for (const Expr& e : n.extents) {
    check_int_expr(e, n.loc, "a Parallel extent");
    auto c = as_const_int(e);
    if (!c || *c < 1)
      diags_.error(pick(e ? e->loc : SourceLoc{}, n.loc),
                   "Parallel: extent {} must be a constant of at least 1", expr_text(e));
  }
  // The loop variables are the body's only: like a for loop's, they are not visible after it.
  const FlowState before = state_;
  for (const Var& v : n.vars) {
    if (!v || !v->type.is_scalar() || !v->type.dtype.is_integer())
      diags_.error(n.loc, "Parallel: a loop variable must be an integer scalar");
    else
      define_var(v);
  }
  for (const ElementAssign& a : n.body) {
    check_element_expr(a.value, a.loc);
    check_element_access(a.target, a.loc, true);
  }
  FlowState after = before;
  for (const auto& [v, loc] : state_.freed) after.freed.emplace(v, loc);
  state_ = std::move(after);
}

void Verifier::check_element_access(const ElementAccess& a, SourceLoc fallback, bool written) {
  const SourceLoc loc = pick(a.loc, fallback);
  if (!a.tensor || !a.tensor->type.is_tensor() || !a.tensor->type.tensor) {
    diags_.error(loc, "Parallel: '{}' is not a tensor", a.tensor ? a.tensor->name : "?");
    return;
  }
  use_var(a.tensor, loc);
  const TensorType& t = *a.tensor->type.tensor;
  if (t.scope == Scope::Barrier) {
    diags_.error(loc, "Parallel: '{}' is a barrier; only the barrier instructions take it", a.tensor->name);
    return;
  }
  if (a.index.size() != t.shape.size())
    diags_.error(loc, "Parallel: '{}' has rank {} but {} is indexed by {} value{}", a.tensor->name,
                 t.shape.size(), print_element_access(a), a.index.size(), a.index.size() == 1 ? "" : "s");
  for (const Expr& e : a.index) check_int_expr(e, loc, "an element index");
  if (written && !t.dtype.is_float() && !t.dtype.is_integer())
    diags_.error(loc, "Parallel: '{}' is {}; a Parallel body writes numbers", a.tensor->name, t.dtype.name());
}

void Verifier::check_element_expr(const ElementExpr& e, SourceLoc fallback) {
  if (!e) {
    diags_.error(fallback, "Parallel: an assignment has no value");
    return;
  }
  switch (e->kind) {
    case ElementExprNode::Kind::Scalar:
      check_expr(e->scalar, pick(e->loc, fallback));
      return;
    case ElementExprNode::Kind::Access:
      check_element_access(e->access, fallback, false);
      return;
    case ElementExprNode::Kind::Op:
      if (static_cast<int>(e->args.size()) != arity(e->op)) {
        diags_.error(pick(e->loc, fallback), "Parallel: {} takes {} operands, got {}", to_string(e->op),
                     arity(e->op), e->args.size());
        return;
      }
      for (const ElementExpr& a : e->args) check_element_expr(a, fallback);
      return;
  }
}

}  // namespace tilevm::ir::verifier_detail
