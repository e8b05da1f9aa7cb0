// Matrix multiply-accumulate of register tiles.
#pragma once

#include "tilevm/ir/inst/inst.h"

namespace tilevm::ir {

// d = Dot(a, b, c): d = a @ b + c over the last two dimensions ([M, K] @ [K, N] + [M, N]); the result has
// c's dtype and layout. Tensor cores when the layouts divide an MMA atom (target/atoms.h), else SIMT.
struct DotInst : InstNode {
  static constexpr InstKind kKind = InstKind::Dot;
  TensorArg a, b, c;
  Var out;
  DotInst(TensorArg x, TensorArg y, TensorArg z, Var o = nullptr, SourceLoc l = {})
      : InstNode(kKind, l), a(std::move(x)), b(std::move(y)), c(std::move(z)), out(std::move(o)) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

}  // namespace tilevm::ir
