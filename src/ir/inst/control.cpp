#include "tilevm/ir/inst/control.h"

namespace tilevm::ir {

Inst BlockIndicesInst::rewrite(const ExprMap&, const VarMap&) const {
  return std::make_shared<BlockIndicesInst>(loc);
}
Inst SynchronizeInst::rewrite(const ExprMap&, const VarMap&) const {
  return std::make_shared<SynchronizeInst>(loc);
}
Inst ExitInst::rewrite(const ExprMap&, const VarMap&) const {
  return std::make_shared<ExitInst>(loc);
}

Inst PrintInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<PrintInst>(ir::rewrite(value, exprs, vars), loc);
}

}  // namespace tilevm::ir
