// Scalar expressions: operand types, variables, division by a constant zero, grid extents.
#include <fmt/format.h>

#include "tilevm/target/limits.h"
#include "verifier_impl.h"

namespace tilevm::ir::verifier_detail {

namespace {

bool is_number(DataType t) {
  return t.is_integer() || t.is_float();
}

const char* op_name(BinaryOp op) {
  return to_string(op);
}

}  // namespace

std::optional<DataType> Verifier::check_expr(const Expr& e, SourceLoc fallback) {
  if (!e) {
    diags_.error(fallback, "an expression is missing");
    return std::nullopt;
  }
  const SourceLoc loc = pick(e->loc, fallback);
  switch (e->kind) {
    case ExprKind::IntImm:
      if (!e->type.is_integer()) {
        diags_.error(loc, "integer literal {} has the non-integer type {}", e->as<IntImm>()->value,
                     e->type.name());
        return std::nullopt;
      }
      return e->type;
    case ExprKind::FloatImm:
      if (!e->type.is_float()) {
        diags_.error(loc, "float literal {} has the non-float type {}", e->as<FloatImm>()->value,
                     e->type.name());
        return std::nullopt;
      }
      return e->type;
    case ExprKind::BoolImm:
      return DataType::boolean();
    case ExprKind::VarRef: {
      const auto* r = e->as<VarRef>();
      if (!r->var) {
        diags_.error(loc, "a variable reference has no variable");
        return std::nullopt;
      }
      use_var(r->var, loc);
      if (!r->var->type.is_scalar()) {
        diags_.error(loc, "'{}' is {}, not a scalar", r->var->name, type_text(r->var->type));
        return std::nullopt;
      }
      return r->var->type.dtype;
    }
    case ExprKind::Unary: {
      const auto* u = e->as<UnaryExpr>();
      auto a = check_expr(u->a, loc);
      if (!a) return std::nullopt;
      if (u->op == UnaryOp::Not) {
        if (!a->is_bool()) {
          diags_.error(loc, "'not' needs a bool operand, got {}", a->name());
          return std::nullopt;
        }
        return DataType::boolean();
      }
      if (!is_number(*a)) {
        diags_.error(loc, "'-' needs a number, got {}", a->name());
        return std::nullopt;
      }
      return *a;
    }
    case ExprKind::Binary: {
      const auto* b = e->as<BinaryExpr>();
      auto x = check_expr(b->a, loc);
      auto y = check_expr(b->b, loc);
      if (!x || !y) return std::nullopt;
      const BinaryOp op = b->op;
      const std::string ops = op_name(op);
      auto bad = [&](const char* need) {
        diags_.error(loc, "'{}' needs {}, got {} and {}", ops, need, x->name(), y->name());
        return std::nullopt;
      };
      switch (op) {
        case BinaryOp::And:
        case BinaryOp::Or:
          if (!x->is_bool() || !y->is_bool()) return bad("bool operands");
          return DataType::boolean();
        case BinaryOp::Shl:
        case BinaryOp::Shr:
        case BinaryOp::BitAnd:
        case BinaryOp::BitOr:
        case BinaryOp::BitXor:
          if (!x->is_integer() || !y->is_integer()) return bad("integer operands");
          if (op == BinaryOp::Shl || op == BinaryOp::Shr) {
            auto s = as_const_int(b->b);
            const int bits = binary_result_type(op, *x, *y).bits();
            if (s && (*s < 0 || *s >= bits)) {
              diags_.error(loc, "shift by {} is out of range for {} (0 to {})", *s,
                           binary_result_type(op, *x, *y).name(), bits - 1);
              return std::nullopt;
            }
          }
          return binary_result_type(op, *x, *y);
        case BinaryOp::Eq:
        case BinaryOp::Ne:
          if (x->is_bool() && y->is_bool()) return DataType::boolean();
          if (!is_number(*x) || !is_number(*y)) return bad("two numbers or two bools");
          return DataType::boolean();
        case BinaryOp::Lt:
        case BinaryOp::Le:
        case BinaryOp::Gt:
        case BinaryOp::Ge:
          if (!is_number(*x) || !is_number(*y)) return bad("numbers");
          return DataType::boolean();
        case BinaryOp::CeilDiv:
          if (!x->is_integer() || !y->is_integer()) return bad("integer operands");
          break;
        default:
          if (!is_number(*x) || !is_number(*y)) return bad("numbers");
          break;
      }
      if (op == BinaryOp::Div || op == BinaryOp::Mod || op == BinaryOp::CeilDiv) {
        DataType r = binary_result_type(op, *x, *y);
        auto d = as_const_int(b->b);
        if (r.is_integer() && d && *d == 0) {
          diags_.error(loc, "division by zero in {}", expr_text(e));
          return std::nullopt;
        }
      }
      return binary_result_type(op, *x, *y);
    }
  }
  return std::nullopt;
}

void Verifier::check_int_expr(const Expr& e, SourceLoc fallback, const std::string& what) {
  auto t = check_expr(e, fallback);
  if (t && !t->is_integer())
    diags_.error(pick(e->loc, fallback), "{} must be an integer, got {} ({})", what, t->name(), expr_text(e));
}

void Verifier::check_bool_expr(const Expr& e, SourceLoc fallback, const std::string& what) {
  auto t = check_expr(e, fallback);
  if (t && !t->is_bool())
    diags_.error(pick(e->loc, fallback), "{} must be a bool, got {} ({}); compare it, e.g. {} != 0", what,
                 t->name(), expr_text(e), expr_text(e));
}

bool host_known(const Program& program, const Expr& e, std::string* offender) {
  std::vector<Expr> todo{e};
  while (!todo.empty()) {
    Expr x = todo.back();
    todo.pop_back();
    if (!x) continue;
    if (const auto* r = x->as<VarRef>()) {
      bool is_param = false;
      for (const Var& p : program.params)
        if (p && p == r->var && p->type.is_scalar()) is_param = true;
      if (!is_param) {
        *offender = r->var ? r->var->name : "?";
        return false;
      }
    } else if (const auto* b = x->as<BinaryExpr>()) {
      todo.push_back(b->a);
      todo.push_back(b->b);
    } else if (const auto* u = x->as<UnaryExpr>()) {
      todo.push_back(u->a);
    }
  }
  return true;
}

void Verifier::check_grid_expr(const Expr& e, SourceLoc fallback, int index) {
  const std::string what = fmt::format("grid extent {}", index);
  if (!e) {
    diags_.error(fallback, "{} is missing", what);
    return;
  }
  // Only constants and scalar parameters: the grid is known at launch.
  std::string offender;
  if (!host_known(program_, e, &offender)) {
    diags_.error(pick(e->loc, fallback),
                 "{} uses '{}'; the grid may use only constants and scalar parameters", what, offender);
    return;
  }
  check_int_expr(e, fallback, what);
  auto v = as_const_int(e);
  if (v && *v < 1) diags_.error(pick(e->loc, fallback), "{} is {}; it must be at least 1", what, *v);
  // The launch limits of every GPU (a grid from parameters is checked when it is launched or interpreted).
  const int64_t limit = index == 0 ? target::kMaxGridX : target::kMaxGridYZ;
  if (v && *v > limit) {
    diags_.error(pick(e->loc, fallback), "{} is {}; a GPU launches at most {} blocks in dimension {}", what,
                 *v, limit, "xyz"[index]);
  }
}

}  // namespace tilevm::ir::verifier_detail
