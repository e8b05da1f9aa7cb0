// The element expressions of a `for i, j in Parallel(BM, BN):` body (ParallelStmt, stmt.h; docs/language.md
// "The tile layer"): scalar code over one element of each tile, which the tile layer lowers to whole-tile
// instructions (tile/lower_parallel.h).
//
//   s[i, j] = exp(s[i, j] - m[i]) * scale
//     target   ElementAccess{s, [i, j]}
//     value    Op(Mul, [Op(Exp, [Op(Sub, [Access s[i, j], Access m[i]])]), Scalar scale])
//
// An access's indices are scalar expressions of the loop variables and the program's scalars; which of them
// a thread binding can take (each index a loop variable, plus a loop-invariant offset for memory tensors) is
// the tile layer's to decide and report, so that the parser and printer stay general.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tilevm/ir/inst/elementwise.h"

namespace tilevm::ir {

// t[index...]: one element of a register, shared or global tensor.
struct ElementAccess {
  Var tensor;
  std::vector<Expr> index;
  SourceLoc loc;
};

struct ElementExprNode;
using ElementExpr = std::shared_ptr<const ElementExprNode>;

struct ElementExprNode {
  enum class Kind { Scalar, Access, Op };
  Kind kind = Kind::Scalar;
  Expr scalar;           // Scalar: a value the same for every element (no loop variable in it)
  ElementAccess access;  // Access
  ElementwiseOp op = ElementwiseOp::Add;  // Op: Add ... Fma, with arity(op) arguments
  std::vector<ElementExpr> args;
  SourceLoc loc;
};

ElementExpr make_element_scalar(Expr value, SourceLoc loc = {});
ElementExpr make_element_access(ElementAccess access);
ElementExpr make_element_op(ElementwiseOp op, std::vector<ElementExpr> args, SourceLoc loc = {});

// `target = value`, one statement of a Parallel body.
struct ElementAssign {
  ElementAccess target;
  ElementExpr value;
  SourceLoc loc;
};

// Every scalar expression (indices and scalars) of an element expression, in order.
void for_each_expr(const ElementAccess& a, const ExprFn& fn);
void for_each_expr(const ElementExpr& e, const ExprFn& fn);
// Every access, in evaluation order (arguments left to right).
void for_each_access(const ElementExpr& e, const std::function<void(const ElementAccess&)>& fn);
// Rebuilt with mutated expressions and variables (a new tree; the caller compares to keep the old one).
ElementAccess rewrite(const ElementAccess& a, const ExprMap& exprs, const VarMap& vars);
ElementExpr rewrite(const ElementExpr& e, const ExprMap& exprs, const VarMap& vars);

// The text form: `s[i, j]`, `exp(s[i, j] - m[i]) * 0.5`, `max(acc[i, j], 0.0)`, `where(a[i] > 0, a[i], 0)`.
// Operators print infix with the precedence of the scalar expressions; functions by their lower-case names.
std::string print_element_access(const ElementAccess& a);
std::string print_element_expr(const ElementExpr& e);
// The per-element op of a binary operator in a Parallel body (+ - * / %, the comparisons, min and max), or
// nullopt for one it does not have (bit operations, shifts, and/or, ceil_div).
std::optional<ElementwiseOp> element_binary_op(BinaryOp op);
// The function name of an op in a Parallel body ("exp", "max", "where", ...), and back (false if none).
const char* element_function_name(ElementwiseOp op);
bool element_function(std::string_view name, ElementwiseOp* op);
// Every function name, as a sentence: "max, min, ... and fmod" (for diagnostics).
std::string element_function_list();

}  // namespace tilevm::ir
