// Binding syntax trees to scalar expressions and tensor operands.
//
// Scalars and tensors never mix: a tensor name inside a scalar expression, or a scalar where a tensor is
// needed, is an error naming both. Top-level constants are substituted as literals (located at the use), so
// the IR never refers to them.
#include <cmath>
#include <limits>
#include <optional>

#include "parser_impl.h"

namespace tilevm::ir::parser {
namespace {

std::string describe_var(const Var& v) {
  return fmt::format("'{}' is {}", v->name, to_string(v->type));
}

// A literal equal to `e` when `e` is built from literals only (floats are folded here; make_binary already
// folds integers), else nullptr. `error` is set for a division by zero or a non-finite result.
Expr fold(const Expr& e, std::string& error) {
  if (!e) return nullptr;
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::BoolImm:
      return e;
    case ExprKind::VarRef:
      return nullptr;
    case ExprKind::Unary: {
      const auto& u = *e->as<UnaryExpr>();
      Expr a = fold(u.a, error);
      return a ? make_unary(u.op, a, e->loc) : nullptr;
    }
    case ExprKind::Binary: {
      const auto& b = *e->as<BinaryExpr>();
      Expr x = fold(b.a, error), y = fold(b.b, error);
      if (!x || !y) return nullptr;
      Expr folded = make_binary(b.op, x, y, e->loc);
      if (folded->kind != ExprKind::Binary) return folded;
      // Not folded by make_binary: a float operand, a division by zero, or a bool operand.
      auto value = [](const Expr& v) -> std::optional<double> {
        if (const auto* i = v->as<IntImm>()) return static_cast<double>(i->value);
        if (const auto* f = v->as<FloatImm>()) return f->value;
        return std::nullopt;
      };
      auto p = value(x), q = value(y);
      if (!p || !q) return nullptr;
      if ((b.op == BinaryOp::Div || b.op == BinaryOp::Mod || b.op == BinaryOp::CeilDiv) && *q == 0) {
        error = "division by zero in a constant expression";
        return nullptr;
      }
      if (!folded->type.is_float()) return nullptr;  // integer ops that refuse to fold (negative shift, ...)
      double r = 0;
      switch (b.op) {
        case BinaryOp::Add:
          r = *p + *q;
          break;
        case BinaryOp::Sub:
          r = *p - *q;
          break;
        case BinaryOp::Mul:
          r = *p * *q;
          break;
        case BinaryOp::Div:
          r = *p / *q;
          break;
        case BinaryOp::Mod:
          r = std::fmod(*p, *q);
          break;
        case BinaryOp::Min:
          r = std::min(*p, *q);
          break;
        case BinaryOp::Max:
          r = std::max(*p, *q);
          break;
        default:
          return nullptr;
      }
      if (!std::isfinite(r)) {
        error = "the constant expression overflows";
        return nullptr;
      }
      return make_float(r, e->loc, folded->type);
    }
  }
  return nullptr;
}

// Integer literals combined by + - * << or negated are folded exactly. At run time integers wrap
// (docs/language.md section 4), but a constant that wraps (M * N past 2^31) is a mistake whose symptom shows
// up far away (an extent of 0). So a result past its i32 type becomes an i64 literal, as a literal of that
// value would be (and as Python computes it), and a result past i64 is an error where it happens.
struct ExactFold {
  Expr literal;       // the i64 literal of a result that does not fit its narrower type
  std::string error;  // the result does not fit i64
};
// Empty when the result fits its type (or the operands are not integer literals): make_binary folds it.
ExactFold fold_exact(std::optional<BinaryOp> op, const Expr& a, const Expr& b, SourceLoc loc) {
  const auto* x = a->as<IntImm>();
  const auto* y = b ? b->as<IntImm>() : nullptr;
  if (!x || (op && !y)) return {};
  const DataType type = op ? binary_result_type(*op, a->type, b->type) : a->type;
  if (!type.is_integer()) return {};
  // int64 operands: products and shifts up to 2^126 fit __int128 exactly.
  __extension__ using Wide = __int128;
  const Wide p = x->value, q = y ? y->value : 0;
  Wide r = 0;
  std::string text;
  if (!op) {
    r = -p;
    text = fmt::format("-({})", x->value);
  } else {
    switch (*op) {
      case BinaryOp::Add:
        r = p + q;
        break;
      case BinaryOp::Sub:
        r = p - q;
        break;
      case BinaryOp::Mul:
        r = p * q;
        break;
      case BinaryOp::Shl:
        if (q < 0 || q > 63) return {};  // not folded
        r = p * (Wide{1} << static_cast<int>(q));
        break;
      default:
        return {};  // / % >> & | ^ min max cannot leave the operands' range
    }
    text = fmt::format("{} {} {}", x->value, to_string(*op), y->value);
  }
  const int bits = type.bits();
  const Wide lo = type.is_signed() ? -(Wide{1} << (bits - 1)) : Wide{0};
  const Wide hi = type.is_signed() ? (Wide{1} << (bits - 1)) - 1 : (Wide{1} << bits) - 1;
  if (r >= lo && r <= hi) return {};
  if (type.is_signed()) {
    if (r >= INT64_MIN && r <= INT64_MAX)
      return {make_int(static_cast<int64_t>(r), loc, DataType::i64()), {}};
    return {nullptr,
            fmt::format("the constant expression {} overflows i64 ({}..{})", text, INT64_MIN, INT64_MAX)};
  }
  return {nullptr, fmt::format("the constant expression {} overflows {} ({}..{})", text, type.name(),
                               static_cast<int64_t>(lo), static_cast<uint64_t>(hi))};
}

// The same literal at another location (a constant substituted where it is used).
Expr relocate(const Expr& literal, SourceLoc loc) {
  if (const auto* i = literal->as<IntImm>()) return make_int(i->value, loc, i->type);
  if (const auto* f = literal->as<FloatImm>()) return make_float(f->value, loc, f->type);
  if (const auto* b = literal->as<BoolImm>()) return make_bool(b->value, loc);
  return literal;
}

}  // namespace

const Symbol& Parser::lookup(const std::string& name, SourceLoc loc) {
  auto it = symbols_.find(name);
  if (it == symbols_.end()) fail(loc, fmt::format("unknown name '{}'", name));
  // A name whose definition failed was reported there; its uses stay silent.
  if (it->second.kind == Symbol::Kind::Poisoned) throw ParseAbort{};
  return it->second;
}

bool Parser::names_tensor(const Syn& syn) const {
  if (syn.kind != SynKind::Name && syn.kind != SynKind::Subscript) return false;
  auto it = symbols_.find(syn.name);
  return it != symbols_.end() && it->second.kind == Symbol::Kind::Variable &&
         it->second.var->type.is_tensor();
}

Expr Parser::bind_scalar(const Syn& syn) {
  switch (syn.kind) {
    case SynKind::Int:
      return make_int(syn.int_value, syn.loc, syn.int_type);
    case SynKind::Float:
      return make_float(syn.float_value, syn.loc);
    case SynKind::Bool:
      return make_bool(syn.bool_value, syn.loc);
    case SynKind::Name: {
      // `inf` and `nan` are the float literals the printer writes for those values (a program's own name
      // for something else takes precedence).
      if ((syn.name == "inf" || syn.name == "nan") && !symbols_.count(syn.name))
        return make_float(syn.name == "inf" ? std::numeric_limits<double>::infinity()
                                            : std::numeric_limits<double>::quiet_NaN(),
                          syn.loc);
      const Symbol& s = lookup(syn.name, syn.loc);
      if (s.kind == Symbol::Kind::Constant) return relocate(s.constant, syn.loc);
      if (s.kind == Symbol::Kind::Layout)
        fail(syn.loc, fmt::format("'{}' is a layout, not a scalar", syn.name));
      if (s.var->type.is_tensor()) {
        fail(syn.loc, fmt::format("a scalar is needed here, but {}", describe_var(s.var)));
      }
      if (s.var->type.is_pointer()) {
        fail(syn.loc, fmt::format("a scalar is needed here, but {} (pointers are only used by ViewGlobal)",
                                  describe_var(s.var)));
      }
      return make_var_ref(s.var, syn.loc);
    }
    case SynKind::Binary: {
      // The right operand first, as GCC evaluated the arguments of make_binary before: an unknown name on the
      // right is still reported when the left one is a constant whose definition failed (silent).
      Expr b = bind_scalar(*syn.operands[1]);
      Expr a = bind_scalar(*syn.operands[0]);
      ExactFold exact = fold_exact(syn.binary_op, a, b, syn.loc);
      if (!exact.error.empty()) fail(syn.loc, exact.error);
      if (exact.literal) return exact.literal;
      return make_binary(syn.binary_op, std::move(a), std::move(b), syn.loc);
    }
    case SynKind::Unary: {
      Expr a = bind_scalar(*syn.operands[0]);
      if (syn.unary_op == UnaryOp::Neg) {
        ExactFold exact = fold_exact(std::nullopt, a, nullptr, syn.loc);
        if (!exact.error.empty()) fail(syn.loc, exact.error);
        if (exact.literal) return exact.literal;
      }
      return make_unary(syn.unary_op, std::move(a), syn.loc);
    }
    case SynKind::Call: {
      BinaryOp op = BinaryOp::Min;
      if (syn.name == "max") {
        op = BinaryOp::Max;
      } else if (syn.name == "ceil_div") {
        op = BinaryOp::CeilDiv;
      } else if (syn.name != "min") {
        if (is_instruction(syn.name)) {
          fail(syn.loc, fmt::format("instruction {} cannot be used inside an expression; assign its result "
                                    "to a name first",
                                    syn.name));
        }
        fail(syn.loc,
             fmt::format("unknown function '{}'; scalar expressions call min, max or ceil_div", syn.name));
      }
      if (syn.args.size() != 2) {
        fail(syn.loc, fmt::format("{} takes 2 arguments, got {}", syn.name, syn.args.size()));
      }
      for (const SynArg& a : syn.args) {
        if (!a.keyword.empty()) fail(a.loc, fmt::format("{} takes no keyword arguments", syn.name));
      }
      return make_binary(op, bind_scalar(*syn.args[0].value), bind_scalar(*syn.args[1].value), syn.loc);
    }
    case SynKind::Subscript: {
      const Symbol& s = lookup(syn.name, syn.loc);
      if (s.kind == Symbol::Kind::Variable && s.var->type.is_tensor()) {
        fail(syn.loc, fmt::format("a scalar is needed here, but {}", describe_var(s.var)));
      }
      fail(syn.loc, fmt::format("'{}' is not a tensor and cannot be subscripted", syn.name));
    }
    case SynKind::List:
      fail(syn.loc, "a list is not a scalar");
    case SynKind::Chain:
      fail(syn.loc, "a layout is not a scalar");
  }
  fail(syn.loc, "expected a scalar expression");
}

Expr Parser::bind_constant(const Syn& syn, const std::string& what) {
  Expr e = bind_scalar(syn);
  std::string error;
  Expr literal = fold(e, error);
  if (!error.empty()) fail(syn.loc, error);
  if (!literal) fail(syn.loc, fmt::format("{} must be a constant expression", what));
  return literal;
}

int64_t Parser::bind_const_int(const Syn& syn, const std::string& what) {
  Expr e = bind_constant(syn, what);
  auto v = as_const_int(e);
  if (!v) fail(syn.loc, fmt::format("{} must be an integer, got {}", what, e->type.name()));
  return *v;
}

TensorArg Parser::bind_tensor(const Syn& syn) {
  if (syn.kind != SynKind::Name && syn.kind != SynKind::Subscript) {
    fail(syn.loc, "a tensor is needed here (a tensor name, optionally subscripted: t[i], t[a:, b:])");
  }
  TensorArg arg;
  arg.tensor = bind_tensor_var(syn, "a tensor");
  arg.loc = syn.loc;
  const TensorType& type = *arg.tensor->type.tensor;
  if (!syn.slices.empty() && type.scope == Scope::Register) {
    fail(syn.loc, fmt::format("register tensor '{}' cannot be subscripted", syn.name));
  }
  if (static_cast<int>(syn.slices.size()) > type.rank()) {
    fail(syn.loc, fmt::format("{} subscripts for '{}' of rank {}", syn.slices.size(), syn.name, type.rank()));
  }
  for (const SynSlice& s : syn.slices) {
    arg.slices.push_back(Slice{s.kind, s.value ? bind_scalar(*s.value) : nullptr});
  }
  return arg;
}

Var Parser::bind_tensor_var(const Syn& syn, const char* role) {
  const Symbol& s = lookup(syn.name, syn.loc);
  if (s.kind != Symbol::Kind::Variable) {
    fail(syn.loc, fmt::format("{} is needed here, but '{}' is a top-level {}", role, syn.name,
                              s.kind == Symbol::Kind::Layout ? "layout" : "constant"));
  }
  if (!s.var->type.is_tensor())
    fail(syn.loc, fmt::format("{} is needed here, but {}", role, describe_var(s.var)));
  return s.var;
}

Operand Parser::bind_operand(const Syn& syn) {
  Operand op;
  if (names_tensor(syn)) {
    op.tensor = bind_tensor(syn);
  } else {
    op.scalar = bind_scalar(syn);
  }
  return op;
}

DataType Parser::bind_dtype(const Syn& syn) {
  if (syn.kind != SynKind::Name) fail(syn.loc, "a data type name is needed here (f16, i32, u4, f6e3m2, ...)");
  try {
    return DataType::parse(syn.name);
  } catch (const Error& e) {
    fail(syn.loc, e.what());
  }
}

}  // namespace tilevm::ir::parser
