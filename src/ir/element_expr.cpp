// Element expressions of Parallel bodies (element_expr.h).
#include "tilevm/ir/element_expr.h"

#include <array>
#include <cmath>

#include <fmt/format.h>

#include "tilevm/ir/printer.h"

namespace tilevm::ir {

ElementExpr make_element_scalar(Expr value, SourceLoc loc) {
  auto n = std::make_shared<ElementExprNode>();
  n->kind = ElementExprNode::Kind::Scalar;
  n->scalar = std::move(value);
  n->loc = loc;
  return n;
}

ElementExpr make_element_access(ElementAccess access) {
  auto n = std::make_shared<ElementExprNode>();
  n->kind = ElementExprNode::Kind::Access;
  n->loc = access.loc;
  n->access = std::move(access);
  return n;
}

ElementExpr make_element_op(ElementwiseOp op, std::vector<ElementExpr> args, SourceLoc loc) {
  auto n = std::make_shared<ElementExprNode>();
  n->kind = ElementExprNode::Kind::Op;
  n->op = op;
  n->args = std::move(args);
  n->loc = loc;
  return n;
}

void for_each_expr(const ElementAccess& a, const ExprFn& fn) {
  for (const Expr& e : a.index) fn(e);
}

void for_each_expr(const ElementExpr& e, const ExprFn& fn) {
  switch (e->kind) {
    case ElementExprNode::Kind::Scalar:
      fn(e->scalar);
      break;
    case ElementExprNode::Kind::Access:
      for_each_expr(e->access, fn);
      break;
    case ElementExprNode::Kind::Op:
      for (const ElementExpr& a : e->args) for_each_expr(a, fn);
      break;
  }
}

void for_each_access(const ElementExpr& e, const std::function<void(const ElementAccess&)>& fn) {
  if (e->kind == ElementExprNode::Kind::Access) fn(e->access);
  for (const ElementExpr& a : e->args) for_each_access(a, fn);
}

ElementAccess rewrite(const ElementAccess& a, const ExprMap& exprs, const VarMap& vars) {
  ElementAccess out{vars(a.tensor), {}, a.loc};
  for (const Expr& e : a.index) out.index.push_back(exprs(e));
  return out;
}

ElementExpr rewrite(const ElementExpr& e, const ExprMap& exprs, const VarMap& vars) {
  switch (e->kind) {
    case ElementExprNode::Kind::Scalar:
      return make_element_scalar(exprs(e->scalar), e->loc);
    case ElementExprNode::Kind::Access:
      return make_element_access(rewrite(e->access, exprs, vars));
    case ElementExprNode::Kind::Op: {
      std::vector<ElementExpr> args;
      for (const ElementExpr& a : e->args) args.push_back(rewrite(a, exprs, vars));
      return make_element_op(e->op, std::move(args), e->loc);
    }
  }
  return e;
}

namespace {

// The functions of a Parallel body, by the names the text gives them (the infix operators are the rest).
constexpr std::array<std::pair<ElementwiseOp, const char*>, 13> kFunctions{{
    {ElementwiseOp::Max, "max"},
    {ElementwiseOp::Min, "min"},
    {ElementwiseOp::Abs, "abs"},
    {ElementwiseOp::Exp, "exp"},
    {ElementwiseOp::Exp2, "exp2"},
    {ElementwiseOp::Log, "log"},
    {ElementwiseOp::Sqrt, "sqrt"},
    {ElementwiseOp::Rsqrt, "rsqrt"},
    {ElementwiseOp::Erf, "erf"},
    {ElementwiseOp::Tanh, "tanh"},
    {ElementwiseOp::Where, "where"},
    {ElementwiseOp::Fma, "fma"},
    {ElementwiseOp::Mod, "fmod"},
}};

// Python's binding strengths, as the scalar printer uses them: comparisons, + -, * /, unary minus, atoms.
enum Prec : int { kCompare = 4, kAdd = 9, kMul = 10, kNeg = 11, kAtom = 12 };

const char* infix(ElementwiseOp op) {
  switch (op) {
    case ElementwiseOp::Add:
      return "+";
    case ElementwiseOp::Sub:
      return "-";
    case ElementwiseOp::Mul:
      return "*";
    case ElementwiseOp::Div:
      return "/";
    case ElementwiseOp::Lt:
      return "<";
    case ElementwiseOp::Le:
      return "<=";
    case ElementwiseOp::Gt:
      return ">";
    case ElementwiseOp::Ge:
      return ">=";
    case ElementwiseOp::Eq:
      return "==";
    case ElementwiseOp::Ne:
      return "!=";
    default:
      return nullptr;
  }
}

int precedence(const ElementExpr& e) {
  if (e->kind != ElementExprNode::Kind::Op) return kAtom;
  if (e->op == ElementwiseOp::Neg) return kNeg;
  if (e->op == ElementwiseOp::Add || e->op == ElementwiseOp::Sub) return kAdd;
  if (e->op == ElementwiseOp::Mul || e->op == ElementwiseOp::Div) return kMul;
  return infix(e->op) ? kCompare : kAtom;
}

std::string print_at(const ElementExpr& e, int min_prec) {
  std::string s;
  switch (e->kind) {
    case ElementExprNode::Kind::Scalar: {
      // A scalar sub-expression keeps its own parentheses unless it is an atom (a name or a literal).
      s = print_expr(e->scalar);
      const bool atom =
          e->scalar->kind == ExprKind::VarRef || e->scalar->kind == ExprKind::BoolImm ||
          (e->scalar->kind == ExprKind::IntImm && e->scalar->as<IntImm>()->value >= 0) ||
          (e->scalar->kind == ExprKind::FloatImm && !std::signbit(e->scalar->as<FloatImm>()->value));
      return atom || min_prec == 0 ? s : "(" + s + ")";
    }
    case ElementExprNode::Kind::Access:
      return print_element_access(e->access);
    case ElementExprNode::Kind::Op:
      break;
  }
  const int p = precedence(e);
  if (e->op == ElementwiseOp::Neg) {
    s = "-" + print_at(e->args[0], kNeg);
  } else if (const char* op = infix(e->op)) {
    const int left = p == kCompare ? p + 1 : p;  // comparisons do not chain
    s = fmt::format("{} {} {}", print_at(e->args[0], left), op, print_at(e->args[1], p + 1));
  } else {
    std::string args;
    for (const ElementExpr& a : e->args) args += (args.empty() ? "" : ", ") + print_at(a, 0);
    s = fmt::format("{}({})", element_function_name(e->op), args);
  }
  return p < min_prec ? "(" + s + ")" : s;
}

}  // namespace

std::string print_element_access(const ElementAccess& a) {
  std::string idx;
  for (const Expr& e : a.index) idx += (idx.empty() ? "" : ", ") + print_expr(e);
  return fmt::format("{}[{}]", a.tensor ? a.tensor->name : "<null>", idx);
}

std::string print_element_expr(const ElementExpr& e) {
  return print_at(e, 0);
}

std::optional<ElementwiseOp> element_binary_op(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return ElementwiseOp::Add;
    case BinaryOp::Sub:
      return ElementwiseOp::Sub;
    case BinaryOp::Mul:
      return ElementwiseOp::Mul;
    case BinaryOp::Div:
      return ElementwiseOp::Div;
    case BinaryOp::Mod:
      return ElementwiseOp::Mod;
    case BinaryOp::Lt:
      return ElementwiseOp::Lt;
    case BinaryOp::Le:
      return ElementwiseOp::Le;
    case BinaryOp::Gt:
      return ElementwiseOp::Gt;
    case BinaryOp::Ge:
      return ElementwiseOp::Ge;
    case BinaryOp::Eq:
      return ElementwiseOp::Eq;
    case BinaryOp::Ne:
      return ElementwiseOp::Ne;
    case BinaryOp::Min:
      return ElementwiseOp::Min;
    case BinaryOp::Max:
      return ElementwiseOp::Max;
    default:
      return std::nullopt;
  }
}

const char* element_function_name(ElementwiseOp op) {
  for (const auto& [o, name] : kFunctions)
    if (o == op) return name;
  return to_string(op);
}

std::string element_function_list() {
  std::string s;
  for (size_t k = 0; k < kFunctions.size(); ++k)
    s += fmt::format("{}{}", k == 0 ? "" : k + 1 == kFunctions.size() ? " and " : ", ", kFunctions[k].second);
  return s;
}

bool element_function(std::string_view name, ElementwiseOp* op) {
  for (const auto& [o, n] : kFunctions) {
    if (name == n) {
      *op = o;
      return true;
    }
  }
  return false;
}

}  // namespace tilevm::ir
