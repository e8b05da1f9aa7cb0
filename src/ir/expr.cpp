#include "tilevm/ir/expr.h"

#include "tilevm/ir/compare.h"

#include <algorithm>
#include <cstdint>

#include "tilevm/ir/type.h"
#include "tilevm/support/error.h"

namespace tilevm::ir {

const char* to_string(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "+";
    case BinaryOp::Sub:
      return "-";
    case BinaryOp::Mul:
      return "*";
    case BinaryOp::Div:
      return "/";
    case BinaryOp::Mod:
      return "%";
    case BinaryOp::Shl:
      return "<<";
    case BinaryOp::Shr:
      return ">>";
    case BinaryOp::BitAnd:
      return "&";
    case BinaryOp::BitOr:
      return "|";
    case BinaryOp::BitXor:
      return "^";
    case BinaryOp::Lt:
      return "<";
    case BinaryOp::Le:
      return "<=";
    case BinaryOp::Gt:
      return ">";
    case BinaryOp::Ge:
      return ">=";
    case BinaryOp::Eq:
      return "==";
    case BinaryOp::Ne:
      return "!=";
    case BinaryOp::And:
      return "and";
    case BinaryOp::Or:
      return "or";
    case BinaryOp::Min:
      return "min";
    case BinaryOp::Max:
      return "max";
    case BinaryOp::CeilDiv:
      return "ceil_div";
  }
  return "?";
}

const char* to_string(UnaryOp op) {
  return op == UnaryOp::Neg ? "-" : "not";
}

bool is_comparison(BinaryOp op) {
  return op >= BinaryOp::Lt && op <= BinaryOp::Ne;
}
bool is_call_syntax(BinaryOp op) {
  return op == BinaryOp::Min || op == BinaryOp::Max || op == BinaryOp::CeilDiv;
}

DataType binary_result_type(BinaryOp op, DataType a, DataType b) {
  if (is_comparison(op) || op == BinaryOp::And || op == BinaryOp::Or) return DataType::boolean();
  // A float operand makes the result float, of the wider float width.
  if (a.is_float() || b.is_float()) {
    if (a.is_float() && b.is_float()) return a.bits() >= b.bits() ? a : b;
    return a.is_float() ? a : b;
  }
  // Integers (and bools, which act as i32): the wider type; at equal width a signed one wins.
  auto norm = [](DataType t) { return t.is_bool() ? DataType::i32() : t; };
  a = norm(a);
  b = norm(b);
  if (a.bits() != b.bits()) return a.bits() > b.bits() ? a : b;
  return a.is_signed() ? a : b;
}

namespace {

int64_t wrap_to(int64_t v, DataType t) {
  if (!t.is_integer() || t.bits() >= 64) return v;
  uint64_t mask = t.code_mask();
  uint64_t code = static_cast<uint64_t>(v) & mask;
  if (t.is_signed() && (code >> (t.bits() - 1)) & 1) return static_cast<int64_t>(code | ~mask);
  return static_cast<int64_t>(code);
}

// Folds integer constants where the result is well defined (no division by zero, no over-wide shifts).
std::optional<int64_t> fold(BinaryOp op, int64_t a, int64_t b) {
  switch (op) {
    // Wrapping arithmetic: computed on unsigned values (signed overflow is undefined in C++), then
    // wrapped to the result type by the caller.
    case BinaryOp::Add:
      return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    case BinaryOp::Sub:
      return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
    case BinaryOp::Mul:
      return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    case BinaryOp::Div:
      if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
      return a / b;
    case BinaryOp::Mod:
      if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
      return a % b;
    case BinaryOp::CeilDiv:
      if (b <= 0 || a < 0) return std::nullopt;
      return a / b + (a % b != 0 ? 1 : 0);
    case BinaryOp::Shl:
      if (b < 0 || b > 63) return std::nullopt;
      return static_cast<int64_t>(static_cast<uint64_t>(a) << b);
    case BinaryOp::Shr:
      return b < 0 || b > 63 ? std::nullopt : std::optional<int64_t>(a >> b);
    case BinaryOp::BitAnd:
      return a & b;
    case BinaryOp::BitOr:
      return a | b;
    case BinaryOp::BitXor:
      return a ^ b;
    case BinaryOp::Min:
      return std::min(a, b);
    case BinaryOp::Max:
      return std::max(a, b);
    default:
      return std::nullopt;
  }
}

std::optional<bool> fold_compare(BinaryOp op, int64_t a, int64_t b) {
  return compare(op, a, b);
}

}  // namespace

Expr make_int(int64_t value, SourceLoc loc, DataType type) {
  return std::make_shared<IntImm>(value, type, loc);
}
Expr make_float(double value, SourceLoc loc, DataType type) {
  return std::make_shared<FloatImm>(value, type, loc);
}
Expr make_bool(bool value, SourceLoc loc) {
  return std::make_shared<BoolImm>(value, loc);
}

Expr make_var_ref(const Var& var, SourceLoc loc) {
  TILEVM_ASSERT(var != nullptr, "reference to a null variable");
  return std::make_shared<VarRef>(var, var->type.dtype, loc);
}

Expr make_binary(BinaryOp op, Expr a, Expr b, SourceLoc loc) {
  DataType type = binary_result_type(op, a->type, b->type);
  const auto* ia = a->as<IntImm>();
  const auto* ib = b->as<IntImm>();
  if (ia && ib) {
    if (auto v = fold(op, ia->value, ib->value)) return make_int(wrap_to(*v, type), loc, type);
    if (auto c = fold_compare(op, ia->value, ib->value)) return make_bool(*c, loc);
  }
  return std::make_shared<BinaryExpr>(op, std::move(a), std::move(b), type, loc);
}

Expr make_unary(UnaryOp op, Expr a, SourceLoc loc) {
  if (op == UnaryOp::Not) {
    if (const auto* b = a->as<BoolImm>()) return make_bool(!b->value, loc);
    return std::make_shared<UnaryExpr>(op, std::move(a), DataType::boolean(), loc);
  }
  if (const auto* i = a->as<IntImm>()) {
    return make_int(wrap_to(static_cast<int64_t>(0 - static_cast<uint64_t>(i->value)), i->type), loc,
                    i->type);
  }
  if (const auto* f = a->as<FloatImm>()) return make_float(-f->value, loc, f->type);
  DataType t = a->type.is_bool() ? DataType::i32() : a->type;
  return std::make_shared<UnaryExpr>(op, std::move(a), t, loc);
}

std::optional<int64_t> as_const_int(const Expr& e) {
  if (!e) return std::nullopt;
  if (const auto* i = e->as<IntImm>()) return i->value;
  return std::nullopt;
}

bool same_expr(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || !(a->type == b->type)) return false;
  switch (a->kind) {
    case ExprKind::IntImm:
      return a->as<IntImm>()->value == b->as<IntImm>()->value;
    case ExprKind::FloatImm: {
      double x = a->as<FloatImm>()->value, y = b->as<FloatImm>()->value;
      return x == y || (x != x && y != y);
    }
    case ExprKind::BoolImm:
      return a->as<BoolImm>()->value == b->as<BoolImm>()->value;
    case ExprKind::VarRef:
      return a->as<VarRef>()->var == b->as<VarRef>()->var;
    case ExprKind::Binary: {
      const auto *x = a->as<BinaryExpr>(), *y = b->as<BinaryExpr>();
      return x->op == y->op && same_expr(x->a, y->a) && same_expr(x->b, y->b);
    }
    case ExprKind::Unary: {
      const auto *x = a->as<UnaryExpr>(), *y = b->as<UnaryExpr>();
      return x->op == y->op && same_expr(x->a, y->a);
    }
  }
  return false;
}

}  // namespace tilevm::ir
