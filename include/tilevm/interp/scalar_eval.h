// Block-uniform scalar expressions with the interpreter's semantics (docs/language.md typing rules):
// integers in int64 wrapped to the expression's type, floats in double rounded to it. One evaluator serves
// the interpreter and the GPU launcher (grid extents, workspace shapes and initial values), so the two
// cannot disagree on a value.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/expr.h"
#include "tilevm/support/error.h"

namespace tilevm::interp {

// Thrown by eval_scalar for an expression that has no value (integer division by zero, a shift out of
// range), with the expression's location.
class ScalarEvalError : public Error {
 public:
  ScalarEvalError(SourceLoc where, const std::string& message) : Error(message), loc(where) {}
  SourceLoc loc;
};

// The value of a variable the expression reads; it reports a missing one by throwing.
using VariableValue = std::function<ScalarValue(const ir::Var& var, SourceLoc loc)>;

ScalarValue eval_scalar(const ir::Expr& e, const VariableValue& variable);

// A scalar stored as an element of `type` (floats round to nearest even and overflow to infinity where the
// type has one, integers wrap): what AllocateGlobal's init value and a scalar operand become.
uint64_t scalar_to_code(DataType type, const ScalarValue& v);

}  // namespace tilevm::interp
