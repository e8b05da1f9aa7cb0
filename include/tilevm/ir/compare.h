// The six comparisons, once for every operator enum that has them (ir::BinaryOp, ir::ElementwiseOp) and
// every value type: the interpreter's scalars and tensors and the constant folder all compare through it.
#pragma once

#include <optional>

namespace tilevm::ir {

// a OP b for Lt, Le, Gt, Ge, Eq, Ne; nullopt for any other operator.
template <typename Op, typename T>
std::optional<bool> compare(Op op, const T& a, const T& b) {
  switch (op) {
    case Op::Lt:
      return a < b;
    case Op::Le:
      return a <= b;
    case Op::Gt:
      return a > b;
    case Op::Ge:
      return a >= b;
    case Op::Eq:
      return a == b;
    case Op::Ne:
      return a != b;
    default:
      return std::nullopt;
  }
}

}  // namespace tilevm::ir
