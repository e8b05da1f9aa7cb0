#include "tilevm/ir/inst/tma.h"

namespace tilevm::ir {

Inst AllocateBarrierInst::rewrite(const ExprMap& exprs, const VarMap&) const {
  auto n = std::make_shared<AllocateBarrierInst>(count, ir::rewrite(shape, exprs), loc);
  n->placement = placement;
  return n;
}

void BarrierArriveInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(barrier, fn);
  if (tx) fn(tx);
  if (rank) fn(rank);
}

Inst BarrierArriveInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<BarrierArriveInst>(ir::rewrite(barrier, exprs, vars), tx ? exprs(tx) : Expr(), loc,
                                             rank ? exprs(rank) : Expr());
}

void BarrierWaitInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(barrier, fn);
  fn(parity);
}

Inst BarrierWaitInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<BarrierWaitInst>(ir::rewrite(barrier, exprs, vars), exprs(parity), loc);
}

void CopyTmaInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(dst, fn);
  ir::for_each_expr(src, fn);
  ir::for_each_expr(barrier, fn);
  if (multicast) fn(multicast);
}

Inst CopyTmaInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<CopyTmaInst>(ir::rewrite(dst, exprs, vars), ir::rewrite(src, exprs, vars),
                                       ir::rewrite(barrier, exprs, vars), loc,
                                       multicast ? exprs(multicast) : Expr());
}

void StoreTmaInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(src, fn);
  ir::for_each_expr(dst, fn);
}

Inst StoreTmaInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<StoreTmaInst>(ir::rewrite(src, exprs, vars), ir::rewrite(dst, exprs, vars), loc);
}

Inst ClusterSyncInst::rewrite(const ExprMap&, const VarMap&) const {
  return std::make_shared<ClusterSyncInst>(loc);
}

Inst StoreTmaWaitInst::rewrite(const ExprMap&, const VarMap&) const {
  return std::make_shared<StoreTmaWaitInst>(pending, loc);
}

}  // namespace tilevm::ir
