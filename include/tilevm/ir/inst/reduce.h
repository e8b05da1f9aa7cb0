// Reductions of a register tensor along one dimension.
#pragma once

#include "tilevm/ir/inst/inst.h"

namespace tilevm::ir {

enum class ReduceOp { Sum, Max, Min };
const char* to_string(ReduceOp op);  // "ReduceSum", "ReduceMax", "ReduceMin" (the instruction table's names)

// r = ReduceSum(a, dim=d, [keepdim=True]): reduces along d, across threads where the layout spreads d over
// threads. The result's layout is reduce(layout, [d]) (replicated over those threads); with keepdim the
// dimension stays with extent 1.
struct ReduceInst : InstNode {
  static constexpr InstKind kKind = InstKind::Reduce;
  ReduceOp op;
  TensorArg src;
  int dim;
  bool keepdim;
  Var out;
  ReduceInst(ReduceOp o, TensorArg s, int d, bool keep = false, Var out_var = nullptr, SourceLoc l = {})
      : InstNode(kKind, l), op(o), src(std::move(s)), dim(d), keepdim(keep), out(std::move(out_var)) {}
  int op_index() const override { return static_cast<int>(op); }
  void for_each_expr(const ExprFn& fn) const override { ir::for_each_expr(src, fn); }
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

}  // namespace tilevm::ir
