// interp::eval_scalar and scalar_to_code (interp/scalar_eval.h): the one scalar evaluator the interpreter
// and the GPU launcher share (grid extents, workspace shapes and init values).
#include <gtest/gtest.h>

#include "tilevm/interp/scalar_eval.h"

namespace tilevm::interp {
namespace {

ScalarValue no_variables(const ir::Var& var, SourceLoc) {
  throw Error("unexpected variable " + var->name);
}

int64_t ceil_div(int64_t a, int64_t b) {
  return eval_scalar(ir::make_binary(ir::BinaryOp::CeilDiv, ir::make_int(a), ir::make_int(b)), no_variables)
      .i;
}

TEST(InterpScalarEval, CeilDivIsTheCeilingForEverySign) {
  EXPECT_EQ(ceil_div(7, 2), 4);
  EXPECT_EQ(ceil_div(-7, 2), -3);
  EXPECT_EQ(ceil_div(7, -2), -3);
  EXPECT_EQ(ceil_div(-7, -2), 4);
  EXPECT_EQ(ceil_div(-4, 2), -2);
  EXPECT_EQ(ceil_div(6, 3), 2);
}

TEST(InterpScalarEval, IntegersStayExactBeyondDoublePrecision) {
  const int64_t big = (int64_t{1} << 53) + 1;  // not a double
  const ir::Expr e = ir::make_binary(ir::BinaryOp::Add, ir::make_int(big, {}, DataType::i64()),
                                     ir::make_int(2, {}, DataType::i64()));
  EXPECT_EQ(eval_scalar(e, no_variables).i, big + 2);
}

TEST(InterpScalarEval, DivisionByZeroIsALocatedError) {
  const ir::Expr e = ir::make_binary(ir::BinaryOp::Div, ir::make_int(1), ir::make_int(0), SourceLoc{3, 7});
  try {
    eval_scalar(e, no_variables);
    FAIL() << "no error";
  } catch (const ScalarEvalError& x) {
    EXPECT_EQ(x.loc.line, 3);
    EXPECT_EQ(x.loc.col, 7);
  }
}

TEST(InterpScalarEval, InitValuesRoundLikeArithmeticResults) {
  // Arithmetic (and an init value) overflows to infinity where the type has one; Cast would saturate.
  EXPECT_EQ(scalar_to_code(DataType::f16(), ScalarValue{true, 0, 1e6}), 0x7c00u);
  EXPECT_EQ(scalar_to_code(DataType::f16(), ScalarValue{true, 0, 1.0}), 0x3c00u);
  EXPECT_EQ(scalar_to_code(DataType::uint(4), ScalarValue{false, 17, 0}), 1u);  // integers wrap
}

}  // namespace
}  // namespace tilevm::interp
