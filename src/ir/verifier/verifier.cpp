// The verifier's entry point, the program header (grid, parameters, thread count) and the helpers the
// instruction checks share.
#include "tilevm/ir/verifier.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tilevm/layout/layout_text.h"
#include "tilevm/support/error.h"
#include "tilevm/target/limits.h"
#include "verifier_impl.h"

namespace tilevm::ir {

bool verify_program(const Program& program, Diagnostics& diags) {
  verifier_detail::Verifier v(program, diags);
  return v.run();
}

namespace verifier_detail {

namespace {

int precedence(const Expr& e) {
  const auto* b = e ? e->as<BinaryExpr>() : nullptr;
  return b && !is_call_syntax(b->op) ? 1 : 2;
}

std::string operand_text(const Expr& e) {
  std::string s = expr_text(e);
  return precedence(e) == 1 ? "(" + s + ")" : s;
}

}  // namespace

std::string expr_text(const Expr& e) {
  if (!e) return "?";
  switch (e->kind) {
    case ExprKind::IntImm:
      return std::to_string(e->as<IntImm>()->value);
    case ExprKind::FloatImm:
      return fmt::format("{}", e->as<FloatImm>()->value);
    case ExprKind::BoolImm:
      return e->as<BoolImm>()->value ? "True" : "False";
    case ExprKind::VarRef: {
      const auto* r = e->as<VarRef>();
      return r->var ? r->var->name : "?";
    }
    case ExprKind::Binary: {
      const auto* b = e->as<BinaryExpr>();
      if (is_call_syntax(b->op))
        return fmt::format("{}({}, {})", to_string(b->op), expr_text(b->a), expr_text(b->b));
      return fmt::format("{} {} {}", operand_text(b->a), to_string(b->op), operand_text(b->b));
    }
    case ExprKind::Unary: {
      const auto* u = e->as<UnaryExpr>();
      return u->op == UnaryOp::Not ? "not " + operand_text(u->a) : "-" + operand_text(u->a);
    }
  }
  return "?";
}

std::string shape_text(const std::vector<Expr>& shape) {
  std::string out = "[";
  for (size_t k = 0; k < shape.size(); ++k) out += (k ? ", " : "") + expr_text(shape[k]);
  return out + "]";
}

std::string index_text(const layout::Index& index) {
  return fmt::format("[{}]", fmt::join(index, ", "));
}

std::string layout_text(const layout::Layout& lay) {
  try {
    return layout::print_layout(lay);
  } catch (const Error&) {
    return "<layout>";
  }
}

std::string type_text(const ValueType& type) {
  switch (type.kind) {
    case ValueKind::Scalar:
      return type.dtype.name();
    case ValueKind::Pointer:
      return type.dtype.name() + "*";
    case ValueKind::Tensor:
      if (!type.tensor) return "a tensor without a type";
      return fmt::format("{} {}{}", to_string(type.tensor->scope), type.tensor->dtype.name(),
                         shape_text(type.tensor->shape));
  }
  return "?";
}

const TensorType* tensor_type_of(const Var& v) {
  if (!v || !v->type.is_tensor() || !v->type.tensor) return nullptr;
  return v->type.tensor.get();
}

int64_t linear_index(const layout::Index& shape, const layout::Index& index) {
  int64_t out = 0;
  for (size_t d = 0; d < shape.size(); ++d) out = out * shape[d] + index[d];
  return out;
}

std::optional<Ownership> ownership(const layout::Layout& lay) {
  constexpr int64_t kLimit = int64_t{1} << 24;
  Ownership o;
  o.shape = lay.shape();
  o.threads = lay.num_threads();
  o.numel = lay.num_elements();
  if (o.threads * o.numel > kLimit || o.threads * lay.num_locals() > kLimit) return std::nullopt;
  o.held.assign(static_cast<size_t>(o.threads * o.numel), 0);
  for (int64_t t = 0; t < o.threads; ++t)
    for (int64_t i = 0; i < lay.num_locals(); ++i)
      o.held[static_cast<size_t>(t * o.numel + linear_index(o.shape, lay.map(t, i)))] = 1;
  return o;
}

// ---- the program

bool Verifier::run() {
  const int errors_before = diags_.error_count();
  const Program& p = program_;
  if (p.threads < 0) {
    diags_.error(p.loc, "threads={} must be positive", p.threads);
  } else if (p.threads > 0) {
    threads_ = p.threads;
    threads_given_ = true;
  }

  // Parameters: pointers or scalars, distinct names.
  std::map<std::string, SourceLoc> names;
  for (const Var& v : p.params) {
    if (!v) {
      diags_.error(p.loc, "a parameter of '{}' has no variable", p.name);
      continue;
    }
    if (v->type.is_tensor())
      diags_.error(pick(v->loc, p.loc),
                   "parameter '{}' is {}; a parameter is a pointer (f16* {}) or a scalar (i32 {})", v->name,
                   type_text(v->type), v->name, v->name);
    if (v->type.is_scalar() && v->type.dtype.bits() > 64)
      diags_.error(pick(v->loc, p.loc), "parameter '{}' has an unsupported type {}", v->name,
                   v->type.dtype.name());
    auto [it, fresh] = names.emplace(v->name, v->loc);
    if (!fresh) diags_.error(pick(v->loc, p.loc), "parameter '{}' is declared twice", v->name);
    define_var(v);
  }

  // Grid: 1 to 3 integer extents over constants and scalar parameters.
  if (p.grid.empty() || p.grid.size() > 3)
    diags_.error(p.loc, "the grid has {} dimensions; it must have 1 to 3", p.grid.size());
  for (size_t k = 0; k < p.grid.size(); ++k) check_grid_expr(p.grid[k], p.loc, static_cast<int>(k));
  // Clusters (the parser checks its own; a builder's program is checked here). Whether the grid divides
  // into clusters is known at launch.
  if (!p.cluster.empty()) {
    int64_t blocks = 1;
    for (int64_t c : p.cluster) {
      if (c < 1) diags_.error(p.loc, "a cluster extent must be positive, got {}", c);
      blocks *= std::clamp<int64_t>(c, 1, 1 << 20);
    }
    if (p.cluster.size() > p.grid.size())
      diags_.error(p.loc, "the cluster has {} extents but the grid has {} dimensions", p.cluster.size(),
                   p.grid.size());
    if (blocks > target::kMaxClusterBlocks)
      diags_.error(p.loc, "a cluster of {} blocks; a GPU launches clusters of at most {}", blocks,
                   target::kMaxClusterBlocks);
  }

  check_block(p.body);

  if (has_regions_ && !threads_given_)
    diags_.error(p.loc, "'{}' has Warpgroups regions; write its thread count in the header ([threads=T])",
                 p.name);
  else if (has_regions_ && threads_ % RegionStmt::kWarpgroupThreads != 0)
    diags_.error(p.loc, "'{}' has Warpgroups regions, so its {} threads must be whole warpgroups of {}",
                 p.name, threads_, RegionStmt::kWarpgroupThreads);
  else if (threads_ == 0 && p.threads == 0)
    diags_.error(p.loc,
                 "'{}' has no register layout to take its thread count from; write [threads=T] in the header",
                 p.name);
  // No GPU runs a larger block (and the interpreter would simulate every thread of it).
  if (threads_ > target::kMaxThreadsPerBlock) {
    const std::string from =
        threads_given_ || !threads_from_.known()
            ? std::string()
            : fmt::format(" (from the layout at {}:{})", threads_from_.line, threads_from_.col);
    diags_.error(p.loc, "'{}' has {} threads per block{}; a GPU block has at most {}", p.name, threads_, from,
                 target::kMaxThreadsPerBlock);
  }
  return diags_.error_count() == errors_before;
}

void Verifier::note_threads(const layout::Layout& lay, SourceLoc loc) {
  const int64_t t = lay.num_threads();
  if (region_) {  // the region is the block: its layouts count its threads
    if (t != region_->threads())
      diags_.error(loc, "layout has {} threads but the region Warpgroups({}, {}) at {}:{} has {}", t,
                   region_->first, region_->stop, region_->loc.line, region_->loc.col, region_->threads());
    return;
  }
  if (threads_ == 0) {
    threads_ = t;
    threads_from_ = loc;
    return;
  }
  if (t == threads_) return;
  if (threads_given_ || !threads_from_.known())
    diags_.error(loc, "layout has {} threads but the program has {}", t, threads_);
  else
    diags_.error(loc, "layout has {} threads but the program has {} (from the layout at {}:{})", t, threads_,
                 threads_from_.line, threads_from_.col);
}

const TensorType* Verifier::tensor_operand(const TensorArg& arg, const InstNode& inst,
                                           const std::string& role) {
  const SourceLoc loc = pick(arg.loc, inst.loc);
  if (!arg.tensor) {
    diags_.error(loc, "{}: {} is missing", inst.name(), role);
    return nullptr;
  }
  use_var(arg.tensor, loc);
  const TensorType* t = tensor_type_of(arg.tensor);
  if (!t) {
    diags_.error(loc, "{}: {} must be a tensor, '{}' is {}", inst.name(), role, arg.tensor->name,
                 type_text(arg.tensor->type));
    return nullptr;
  }
  if (!arg.slices.empty() && t->scope == Scope::Register) {
    diags_.error(loc, "{}: register tensor '{}' cannot be sliced", inst.name(), arg.tensor->name);
    return nullptr;
  }
  if (static_cast<int>(arg.slices.size()) > t->rank()) {
    diags_.error(loc, "{}: '{}' has rank {} but {} subscripts", inst.name(), arg.tensor->name, t->rank(),
                 arg.slices.size());
    return nullptr;
  }
  bool ok = true;
  for (size_t d = 0; d < arg.slices.size(); ++d) {
    const Slice& s = arg.slices[d];
    if (s.kind == Slice::Kind::Full) continue;
    if (!s.value) {
      diags_.error(loc, "{}: subscript {} of '{}' has no value", inst.name(), d, arg.tensor->name);
      ok = false;
      continue;
    }
    check_int_expr(s.value, loc, fmt::format("subscript {} of '{}'", d, arg.tensor->name));
    auto v = as_const_int(s.value);
    auto extent = d < t->shape.size() ? as_const_int(t->shape[d]) : std::nullopt;
    if (v && *v < 0) {
      diags_.error(pick(s.value->loc, loc), "{}: subscript {} of '{}' is {}; it must not be negative",
                   inst.name(), d, arg.tensor->name, *v);
      ok = false;
    } else if (v && extent && s.kind == Slice::Kind::Index && *v >= *extent) {
      diags_.error(pick(s.value->loc, loc),
                   "{}: index {} is out of range for dimension {} of '{}' (extent {})", inst.name(), *v, d,
                   arg.tensor->name, *extent);
      ok = false;
    }
  }
  // A register tensor without a layout (a fragment) reaches only tile operators: check_stmt refuses any
  // other instruction that names one (check_fragments_laid_out) before its check_* runs.
  if (t->scope == Scope::Shared && !t->layout) {
    diags_.error(loc, "{}: shared tensor '{}' has no layout", inst.name(), arg.tensor->name);
    return nullptr;
  }
  return ok ? t : nullptr;
}

const TensorType* Verifier::scoped_operand(const TensorArg& arg, const InstNode& inst,
                                           const std::string& role, Scope scope) {
  const TensorType* t = tensor_operand(arg, inst, role);
  if (!t) return nullptr;
  if (t->scope != scope) {
    diags_.error(pick(arg.loc, inst.loc), "{}: {} must be a {} tensor, '{}' is {}", inst.name(), role,
                 to_string(scope), arg.tensor->name, type_text(arg.tensor->type));
    return nullptr;
  }
  return t;
}

std::vector<Expr> Verifier::view_shape(const TensorArg& arg, const TensorType& t) {
  std::vector<Expr> out;
  for (int d = 0; d < t.rank(); ++d) {
    bool indexed = d < static_cast<int>(arg.slices.size()) && arg.slices[d].kind == Slice::Kind::Index;
    if (!indexed) out.push_back(t.shape[d]);
  }
  return out;
}

void Verifier::check_out(const Var& out, const InstNode& inst, DataType dtype, const layout::Layout& lay) {
  if (!out) return;
  use_var(out, inst.loc);
  const TensorType* t = tensor_type_of(out);
  if (!t || t->scope != Scope::Register || !t->layout) {
    diags_.error(inst.loc, "{}: out= must be a register tensor, '{}' is {}", inst.name(), out->name,
                 type_text(out->type));
    return;
  }
  if (t->dtype != dtype)
    diags_.error(inst.loc, "{}: out= '{}' is {} but the result is {}", inst.name(), out->name,
                 t->dtype.name(), dtype.name());
  if (!(*t->layout == lay))
    diags_.error(inst.loc, "{}: out= '{}' has layout {} but the result has layout {}", inst.name(), out->name,
                 layout_text(*t->layout), layout_text(lay));
}

}  // namespace verifier_detail
}  // namespace tilevm::ir
