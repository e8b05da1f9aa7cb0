// Scalar expressions: the block-uniform integer, float and boolean values of a program (loop variables,
// offsets, grid sizes, scalar parameters). Tensors are not expressions; instructions compute them.
//
// Nodes are immutable and shared (Expr is a handle). The make_* functions apply the typing rules of
// docs/language.md (integers widen to the wider operand, a float operand makes the result float,
// comparisons and `and`/`or`/`not` give bool) and fold integer constants; they never fail: ill-typed
// expressions get a best-effort type and the verifier reports them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tilevm/support/diagnostics.h"
#include "tilevm/type/data_type.h"

namespace tilevm::ir {

struct VarNode;
using Var = std::shared_ptr<const VarNode>;

enum class ExprKind { IntImm, FloatImm, BoolImm, VarRef, Binary, Unary };

enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  Mod,  // on integers, / and % truncate (C semantics)
  Shl,
  Shr,
  BitAnd,
  BitOr,
  BitXor,  // integers only
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,  // give bool
  And,
  Or,  // bool operands, give bool
  Min,
  Max,
  CeilDiv  // min(a, b), max(a, b), ceil_div(a, b)
};
enum class UnaryOp { Neg, Not };

// The spelling of an operator in the text format (`+`, `<<`, `and`, `min`, ...).
const char* to_string(BinaryOp op);
const char* to_string(UnaryOp op);
bool is_comparison(BinaryOp op);
bool is_call_syntax(BinaryOp op);  // min, max, ceil_div print as calls

struct ExprNode {
  ExprKind kind;
  DataType type;  // the value's type; for a VarRef to a pointer parameter, the pointee type
  SourceLoc loc;

  ExprNode(ExprKind k, DataType t, SourceLoc l) : kind(k), type(t), loc(l) {}
  virtual ~ExprNode() = default;
  template <typename T>
  const T* as() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }
};
using Expr = std::shared_ptr<const ExprNode>;

struct IntImm : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  int64_t value;
  IntImm(int64_t v, DataType t, SourceLoc l) : ExprNode(kKind, t, l), value(v) {}
};

struct FloatImm : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  double value;
  FloatImm(double v, DataType t, SourceLoc l) : ExprNode(kKind, t, l), value(v) {}
};

struct BoolImm : ExprNode {
  static constexpr ExprKind kKind = ExprKind::BoolImm;
  bool value;
  BoolImm(bool v, SourceLoc l) : ExprNode(kKind, DataType::boolean(), l), value(v) {}
};

struct VarRef : ExprNode {
  static constexpr ExprKind kKind = ExprKind::VarRef;
  Var var;
  VarRef(Var v, DataType t, SourceLoc l) : ExprNode(kKind, t, l), var(std::move(v)) {}
};

struct BinaryExpr : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Binary;
  BinaryOp op;
  Expr a, b;
  BinaryExpr(BinaryOp o, Expr x, Expr y, DataType t, SourceLoc l)
      : ExprNode(kKind, t, l), op(o), a(std::move(x)), b(std::move(y)) {}
};

struct UnaryExpr : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Unary;
  UnaryOp op;
  Expr a;
  UnaryExpr(UnaryOp o, Expr x, DataType t, SourceLoc l) : ExprNode(kKind, t, l), op(o), a(std::move(x)) {}
};

Expr make_int(int64_t value, SourceLoc loc = {}, DataType type = DataType::i32());
Expr make_float(double value, SourceLoc loc = {}, DataType type = DataType::f32());
Expr make_bool(bool value, SourceLoc loc = {});
Expr make_var_ref(const Var& var, SourceLoc loc = {});
Expr make_binary(BinaryOp op, Expr a, Expr b, SourceLoc loc = {});
Expr make_unary(UnaryOp op, Expr a, SourceLoc loc = {});

// The result type of `a op b` under the typing rules (see the file comment).
DataType binary_result_type(BinaryOp op, DataType a, DataType b);

// The value of an integer constant expression (after folding), or nullopt.
std::optional<int64_t> as_const_int(const Expr& e);

// Structural equality (same tree, same variables).
bool same_expr(const Expr& a, const Expr& b);

}  // namespace tilevm::ir
