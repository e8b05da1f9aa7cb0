// Evaluation of block-uniform scalar expressions (docs/language.md typing rules): integers are computed in
// int64 and wrap to the expression's type, floats in double rounded to the expression's type.
#include <cmath>

#include "float_minmax.h"
#include "tilevm/interp/scalar_eval.h"

#include "machine.h"
#include "tilevm/ir/compare.h"
#include "tilevm/type/convert.h"

namespace tilevm::interp::detail {

namespace {

using ir::BinaryOp;

bool truthy(const ScalarValue& v) {
  return v.is_float ? v.f != 0.0 : v.i != 0;
}

ScalarValue make_int_value(int64_t i) {
  return ScalarValue{false, i, 0.0};
}

// Wraps an int64 result to the expression's integer type.
ScalarValue int_result(DataType type, int64_t v) {
  if (type.is_float()) return convert_scalar(make_int_value(v), type);
  if (type.is_bool()) return make_int_value(v != 0);
  return make_int_value(code_to_int(type, wrap_int_result(type, v)));
}

ScalarValue float_result(DataType type, double v) {
  ScalarValue out;
  out.is_float = true;
  out.f = type.is_float() ? decode(type, round_float_result(type, v)) : v;
  return out;
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace
}  // namespace tilevm::interp::detail

namespace tilevm::interp {

using namespace detail;
using ir::BinaryOp;

namespace {

template <typename... Args>
[[noreturn]] void fail_at(SourceLoc loc, fmt::format_string<Args...> format, Args&&... args) {
  throw ScalarEvalError(loc, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace

ScalarValue eval_scalar(const ir::Expr& e, const VariableValue& variable) {
  auto eval = [&](const ir::Expr& x) { return eval_scalar(x, variable); };
  switch (e->kind) {
    case ir::ExprKind::IntImm:
      return int_result(e->type, e->as<ir::IntImm>()->value);
    case ir::ExprKind::FloatImm:
      return float_result(e->type, e->as<ir::FloatImm>()->value);
    case ir::ExprKind::BoolImm:
      return make_int_value(e->as<ir::BoolImm>()->value ? 1 : 0);
    case ir::ExprKind::VarRef:
      return variable(e->as<ir::VarRef>()->var, e->loc);
    case ir::ExprKind::Unary: {
      const auto* u = e->as<ir::UnaryExpr>();
      ScalarValue a = eval(u->a);
      if (u->op == ir::UnaryOp::Not) return make_int_value(truthy(a) ? 0 : 1);
      if (a.is_float) return float_result(e->type, -a.f);
      return int_result(e->type, static_cast<int64_t>(0ull - static_cast<uint64_t>(a.i)));
    }
    case ir::ExprKind::Binary:
      break;
  }
  const auto* b = e->as<ir::BinaryExpr>();
  if (b->op == BinaryOp::And || b->op == BinaryOp::Or) {
    bool x = truthy(eval(b->a));
    if (b->op == BinaryOp::And && !x) return make_int_value(0);
    if (b->op == BinaryOp::Or && x) return make_int_value(1);
    return make_int_value(truthy(eval(b->b)) ? 1 : 0);
  }
  ScalarValue x = eval(b->a), y = eval(b->b);
  const bool fp = x.is_float || y.is_float || e->type.is_float();
  if (ir::is_comparison(b->op)) {
    const bool r =
        fp ? *ir::compare(b->op, scalar_as_double(x), scalar_as_double(y)) : *ir::compare(b->op, x.i, y.i);
    return make_int_value(r ? 1 : 0);
  }
  if (fp) {
    double p = scalar_as_double(x), q = scalar_as_double(y), r = 0;
    switch (b->op) {
      case BinaryOp::Add:
        r = p + q;
        break;
      case BinaryOp::Sub:
        r = p - q;
        break;
      case BinaryOp::Mul:
        r = p * q;
        break;
      case BinaryOp::Div:
        r = p / q;
        break;
      case BinaryOp::Mod:
        r = std::fmod(p, q);
        break;
      case BinaryOp::Min:
        r = detail::float_min(p, q);
        break;
      case BinaryOp::Max:
        r = detail::float_max(p, q);
        break;
      case BinaryOp::CeilDiv:
        r = std::ceil(p / q);
        break;
      default:
        fail_at(e->loc, "operator '{}' needs integer operands", ir::to_string(b->op));
    }
    return float_result(e->type, r);
  }
  const int64_t p = x.i, q = y.i;
  const uint64_t up = static_cast<uint64_t>(p), uq = static_cast<uint64_t>(q);
  int64_t r = 0;
  switch (b->op) {
    case BinaryOp::Add:
      r = static_cast<int64_t>(up + uq);
      break;
    case BinaryOp::Sub:
      r = static_cast<int64_t>(up - uq);
      break;
    case BinaryOp::Mul:
      r = static_cast<int64_t>(up * uq);
      break;
    case BinaryOp::Div:
    case BinaryOp::Mod:
    case BinaryOp::CeilDiv:
      if (q == 0)
        fail_at(e->loc, "integer division by zero ('{}' with a zero divisor)", ir::to_string(b->op));
      if (q == -1) {  // avoids INT64_MIN / -1
        r = b->op == BinaryOp::Mod ? 0 : static_cast<int64_t>(0ull - up);
      } else if (b->op == BinaryOp::Div) {
        r = p / q;
      } else if (b->op == BinaryOp::Mod) {
        r = p % q;
      } else {
        r = -floor_div(-p, q);
      }
      break;
    case BinaryOp::Shl:
    case BinaryOp::Shr:
      if (q < 0 || q >= 64) fail_at(e->loc, "shift by {} is out of range (0 to 63)", q);
      r = b->op == BinaryOp::Shl ? static_cast<int64_t>(up << q) : (p >> q);
      break;
    case BinaryOp::BitAnd:
      r = p & q;
      break;
    case BinaryOp::BitOr:
      r = p | q;
      break;
    case BinaryOp::BitXor:
      r = p ^ q;
      break;
    case BinaryOp::Min:
      r = std::min(p, q);
      break;
    case BinaryOp::Max:
      r = std::max(p, q);
      break;
    default:
      break;
  }
  return int_result(e->type, r);
}

}  // namespace tilevm::interp

namespace tilevm::interp::detail {

ScalarValue Machine::eval(const ir::Expr& e) {
  try {
    return eval_scalar(e, [&](const ir::Var& var, SourceLoc loc) {
      Value& v = lookup(var);
      if (v.kind != Value::Kind::Scalar) raise(loc, "'{}' is not a scalar", var->name);
      return v.scalar;
    });
  } catch (const ScalarEvalError& x) {
    raise(x.loc, "{}", x.what());
  }
}

int64_t Machine::eval_int(const ir::Expr& e, const char* what) {
  ScalarValue v = eval(e);
  if (v.is_float) raise(e->loc, "{} must be an integer, got {}", what, format_value(v.f));
  return v.i;
}

Index Machine::eval_ints(const std::vector<ir::Expr>& exprs, const char* what) {
  Index out;
  out.reserve(exprs.size());
  for (const ir::Expr& e : exprs) out.push_back(eval_int(e, what));
  return out;
}

}  // namespace tilevm::interp::detail
