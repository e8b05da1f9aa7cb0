// Elementwise instructions on register tensors: arithmetic, math functions, comparisons and Where.
#pragma once

#include "tilevm/ir/inst/inst.h"

namespace tilevm::ir {

enum class ElementwiseOp {
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Max,
  Min,  // binary
  Neg,
  Abs,
  Exp,  // Exp to Tanh: is_float_only (a range: keep them together)
  Exp2,
  Log,
  Sqrt,
  Rsqrt,
  Erf,
  Tanh,  // unary
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,     // comparisons: bool results
  Where,  // Where(cond, a, b)
  Fma,    // Fma(a, b, c) = a * b + c rounded once: f32 and f64 tensors
};
inline constexpr ElementwiseOp kLastElementwiseOp = ElementwiseOp::Fma;

// From the instruction table (inst_def.h): the name ("Add", "Rsqrt", "Where", ...) and the operand count.
const char* to_string(ElementwiseOp op);
int arity(ElementwiseOp op);  // 1, 2 or 3
bool is_comparison(ElementwiseOp op);
// The transcendental ops (Exp, Exp2, Log, Sqrt, Rsqrt, Erf, Tanh): float operands only, computed in double
// and rounded once to the result's type.
bool is_float_only(ElementwiseOp op);

// r = Op(a[, b[, c]]): operands are register tensors or scalars (which broadcast); a size-1 dimension of a
// tensor operand broadcasts when the layouts allow it. The result has the broadcast shape and the layout of
// the operand that has that shape (docs/language.md).
struct ElementwiseInst : InstNode {
  static constexpr InstKind kKind = InstKind::Elementwise;
  ElementwiseOp op;
  std::vector<Operand> args;
  Var out;
  // Set by transform::analyze_nan_payload: no reader of the result sees a NaN's bits, so the code generator
  // may leave the hardware's NaN instead of the canonical one.
  bool nan_payload_unobserved = false;
  ElementwiseInst(ElementwiseOp o, std::vector<Operand> a, Var out_var = nullptr, SourceLoc l = {})
      : InstNode(kKind, l), op(o), args(std::move(a)), out(std::move(out_var)) {}
  int op_index() const override { return static_cast<int>(op); }
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

}  // namespace tilevm::ir
