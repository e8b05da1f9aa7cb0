#include "tilevm/ir/inst/async_copy.h"

namespace tilevm::ir {

void CopyAsyncInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(dst, fn);
  ir::for_each_expr(src, fn);
}

Inst CopyAsyncInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<CopyAsyncInst>(ir::rewrite(dst, exprs, vars), ir::rewrite(src, exprs, vars), loc);
}

Inst CopyAsyncCommitGroupInst::rewrite(const ExprMap&, const VarMap&) const {
  return std::make_shared<CopyAsyncCommitGroupInst>(loc);
}

Inst CopyAsyncWaitGroupInst::rewrite(const ExprMap& exprs, const VarMap&) const {
  return std::make_shared<CopyAsyncWaitGroupInst>(exprs(n), loc);
}

}  // namespace tilevm::ir
