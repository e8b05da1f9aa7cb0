// The binding of a Parallel loop's accesses (parallel_binding.h).
#include "tilevm/tile/parallel_binding.h"

#include <fmt/format.h>

#include <algorithm>

#include "tilevm/ir/printer.h"
#include "tilevm/support/error.h"
#include "tilevm/tile/tile_layouts.h"

namespace tilevm::tile {

namespace {

SourceLoc pick(SourceLoc a, SourceLoc b) {
  return a.known() ? a : b;
}

class Binder {
 public:
  Binder(const ir::ParallelStmt& p, Diagnostics& diags) : p_(p), diags_(diags) {}

  std::optional<ParallelBinding> run() {
    ParallelBinding out;
    for (const ir::Expr& e : p_.extents) {
      auto c = ir::as_const_int(e);
      TILEVM_ASSERT(c, "a Parallel extent is not constant after verification");
      out.shape.push_back(*c);
    }
    shape_ = out.shape;
    for (const ir::ElementAssign& a : p_.body) {
      ParallelBinding::Assign bound;
      check_values(a.value);
      ir::for_each_access(a.value, [&](const ir::ElementAccess& r) {
        if (auto b = bind(r, false)) bound.reads.push_back(*b);
      });
      if (auto t = bind(a.target, true)) bound.target = *t;
      out.body.push_back(std::move(bound));
    }
    if (!ok_) return std::nullopt;
    return out;
  }

 private:
  int loop_var(const ir::Expr& e) const { return loop_dimension(p_, e); }

  const ir::VarNode* mentioned(const ir::Expr& e) const { return first_loop_variable(p_, e); }

  void error(SourceLoc loc, const std::string& message) {
    diags_.error(loc.known() ? loc : p_.loc, "Parallel: {}", message);
    ok_ = false;
  }

  // A scalar of a value may use the loop variables (an index value: `where(j < n, ...)`, `i * BN + j`),
  // through the operators lower_parallel computes per element; the rest of it is loop-invariant.
  void check_values(const ir::ElementExpr& e) {
    if (e->kind == ir::ElementExprNode::Kind::Scalar) {
      if (mentioned(e->scalar)) check_index_value(e->scalar, e->scalar);
      return;
    }
    for (const ir::ElementExpr& a : e->args) check_values(a);
  }
  void check_index_value(const ir::Expr& e, const ir::Expr& whole) {
    if (!mentioned(e) || loop_var(e) >= 0) return;
    std::string op;
    if (const auto* b = e->as<ir::BinaryExpr>()) {
      if (ir::element_binary_op(b->op)) {
        check_index_value(b->a, whole);
        check_index_value(b->b, whole);
        return;
      }
      op = ir::to_string(b->op);
    } else if (const auto* u = e->as<ir::UnaryExpr>()) {
      if (u->op == ir::UnaryOp::Neg) {
        check_index_value(u->a, whole);
        return;
      }
      op = ir::to_string(u->op);
    }
    error(pick(e->loc, whole->loc),
          fmt::format("`{}` uses the loop variable '{}' through `{}`, which a Parallel body cannot compute "
                      "per element; index values take + - * / % min max, unary - and comparisons",
                      ir::print_expr(whole), mentioned(e)->name, op));
  }

  std::optional<BoundAccess> bind(const ir::ElementAccess& a, bool target) {
    const ir::TensorType& t = *a.tensor->type.tensor;
    const std::string text = ir::print_element_access(a);
    BoundAccess b;
    b.access = &a;
    b.memory = t.scope != ir::Scope::Register;
    for (const ir::Expr& e : a.index) {
      const int k = loop_var(e);
      if (k >= 0) {
        b.dims.push_back(k);
        b.offsets.push_back(ir::make_int(0));
        continue;
      }
      const ir::VarNode* v = mentioned(e);
      if (!b.memory) {
        error(a.loc, fmt::format("`{}` cannot be bound to threads: index `{}` of the register tile '{}' is "
                                 "not a loop variable (a thread holds fixed elements of a register tile, so "
                                 "it is read only where the loop stands)",
                                 text, ir::print_expr(e), a.tensor->name));
        return std::nullopt;
      }
      if (!v) {  // loop-invariant: a fixed index
        b.dims.push_back(-1);
        b.offsets.push_back(e);
        continue;
      }
      const auto* add = e->as<ir::BinaryExpr>();
      int dim = -1;
      ir::Expr base;
      if (add && add->op == ir::BinaryOp::Add) {
        if (int x = loop_var(add->a); x >= 0 && !mentioned(add->b)) dim = x, base = add->b;
        if (int y = loop_var(add->b); y >= 0 && !mentioned(add->a)) dim = y, base = add->a;
      }
      if (dim < 0) {
        error(a.loc, fmt::format("`{}` cannot be bound to threads: index `{}` of '{}' is not `{}`, "
                                 "`base + {}` or free of the loop variables",
                                 text, ir::print_expr(e), a.tensor->name, v->name, v->name));
        return std::nullopt;
      }
      b.dims.push_back(dim);
      b.offsets.push_back(base);
    }
    const std::vector<int> dims = b.loop_dims();
    for (size_t k = 1; k < dims.size(); ++k) {
      if (dims[k] <= dims[k - 1]) {
        error(a.loc, fmt::format("`{}` cannot be bound to threads: it follows the loop variables out of "
                                 "order ('{}' before '{}'; transpose with a Copy first)",
                                 text, p_.vars[dims[k - 1]]->name, p_.vars[dims[k]]->name));
        return std::nullopt;
      }
    }
    if (!b.memory) {
      const auto shape = t.static_shape();
      for (size_t d = 0; shape && d < shape->size(); ++d) {
        if ((*shape)[d] != shape_[b.dims[d]]) {
          error(a.loc,
                fmt::format("'{}' is {} but `{}` indexes its dimension {} with '{}', whose extent is {}",
                            a.tensor->name, index_text(*shape), text, d, p_.vars[b.dims[d]]->name,
                            shape_[b.dims[d]]));
          return std::nullopt;
        }
      }
    }
    if (target && dims.size() != shape_.size()) {
      std::string missing;
      for (size_t k = 0; k < shape_.size(); ++k)
        if (std::find(dims.begin(), dims.end(), static_cast<int>(k)) == dims.end())
          missing += (missing.empty() ? "'" : ", '") + p_.vars[k]->name + "'";
      error(a.loc, fmt::format("`{}` cannot be bound to threads: it does not follow {} of the loop, so each "
                               "of its values would write the same element (a reduction is ReduceSum, "
                               "ReduceMax or ReduceMin)",
                               text, missing));
      return std::nullopt;
    }
    return b;
  }

  static std::string index_text(const layout::Index& s) {
    std::string out;
    for (int64_t e : s) out += (out.empty() ? "" : ", ") + std::to_string(e);
    return "[" + out + "]";
  }

  const ir::ParallelStmt& p_;
  Diagnostics& diags_;
  layout::Index shape_;
  bool ok_ = true;
};

}  // namespace

std::vector<int> BoundAccess::loop_dims() const {
  std::vector<int> out;
  for (int d : dims)
    if (d >= 0) out.push_back(d);
  return out;
}

void ParallelBinding::for_each_access(const std::function<bool(const BoundAccess&)>& fn) const {
  for (const Assign& a : body) {
    for (const BoundAccess& x : a.reads)
      if (!fn(x)) return;
    if (!fn(a.target)) return;
  }
}

int loop_dimension(const ir::ParallelStmt& p, const ir::Expr& e) {
  const auto* r = e ? e->as<ir::VarRef>() : nullptr;
  for (size_t k = 0; r && k < p.vars.size(); ++k)
    if (r->var == p.vars[k]) return static_cast<int>(k);
  return -1;
}

const ir::VarNode* first_loop_variable(const ir::ParallelStmt& p, const ir::Expr& e) {
  if (!e) return nullptr;
  if (const int k = loop_dimension(p, e); k >= 0) return p.vars[static_cast<size_t>(k)].get();
  if (const auto* b = e->as<ir::BinaryExpr>()) {
    if (const ir::VarNode* v = first_loop_variable(p, b->a)) return v;
    return first_loop_variable(p, b->b);
  }
  if (const auto* u = e->as<ir::UnaryExpr>()) return first_loop_variable(p, u->a);
  return nullptr;
}

std::optional<ParallelBinding> bind_parallel(const ir::ParallelStmt& p, Diagnostics& diags) {
  return Binder(p, diags).run();
}

std::optional<layout::Layout> free_loop_layout(const ParallelBinding& b, int64_t threads, std::string* why) {
  std::optional<DataType> memory, reg;
  b.for_each_access([&](const BoundAccess& x) {
    std::optional<DataType>& first = x.memory ? memory : reg;
    if (!first) first = x.access->tensor->type.tensor->dtype;
    return true;
  });
  return copy_layout(b.shape, memory.value_or(reg.value_or(DataType::f32())), threads, why);
}

layout::Layout access_layout(const layout::Layout& loop, const std::vector<int>& dims) {
  std::vector<int> others;
  for (int k = 0; k < loop.rank(); ++k)
    if (std::find(dims.begin(), dims.end(), k) == dims.end()) others.push_back(k);
  return others.empty() ? loop : layout::reduce(loop, others);
}

}  // namespace tilevm::tile
