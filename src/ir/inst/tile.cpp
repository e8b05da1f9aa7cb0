// The tile layer's operator nodes (tile.h).
#include "tilevm/ir/inst/tile.h"

namespace tilevm::ir {

void AllocateFragmentInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(shape, fn);
  if (init) fn(init);
}

Inst AllocateFragmentInst::rewrite(const ExprMap& exprs, const VarMap&) const {
  return std::make_shared<AllocateFragmentInst>(dtype, ir::rewrite(shape, exprs), ir::rewrite(init, exprs),
                                                loc);
}

void CopyInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(src, fn);
  ir::for_each_expr(dst, fn);
}

Inst CopyInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<CopyInst>(ir::rewrite(src, exprs, vars), ir::rewrite(dst, exprs, vars), loc);
}

void GemmInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(a, fn);
  ir::for_each_expr(b, fn);
  ir::for_each_expr(c, fn);
}

Inst GemmInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<GemmInst>(ir::rewrite(a, exprs, vars), ir::rewrite(b, exprs, vars),
                                    ir::rewrite(c, exprs, vars), transpose_a, transpose_b, loc, wgmma);
}

void FillInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(dst, fn);
  fn(value);
}

Inst FillInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<FillInst>(ir::rewrite(dst, exprs, vars), ir::rewrite(value, exprs), loc);
}

void AtomicAddInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(src, fn);
  ir::for_each_expr(dst, fn);
}

Inst AtomicAddInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<AtomicAddInst>(ir::rewrite(src, exprs, vars), ir::rewrite(dst, exprs, vars), loc);
}

void RasterizeInst::for_each_expr(const ExprFn& fn) const {
  fn(pid);
  fn(rows);
  fn(cols);
  fn(group);
}

Inst RasterizeInst::rewrite(const ExprMap& exprs, const VarMap&) const {
  return std::make_shared<RasterizeInst>(ir::rewrite(pid, exprs), ir::rewrite(rows, exprs),
                                         ir::rewrite(cols, exprs), ir::rewrite(group, exprs), loc);
}

}  // namespace tilevm::ir
