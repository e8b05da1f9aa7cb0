// The global- and shared-memory instruction nodes (memory_global.h, memory_shared.h).
#include "tilevm/ir/inst/memory_shared.h"

namespace tilevm::ir {

void ViewGlobalInst::for_each_expr(const ExprFn& fn) const {
  fn(ptr);
  ir::for_each_expr(shape, fn);
  ir::for_each_expr(strides, fn);
}

Inst ViewGlobalInst::rewrite(const ExprMap& exprs, const VarMap&) const {
  return std::make_shared<ViewGlobalInst>(exprs(ptr), dtype, ir::rewrite(shape, exprs),
                                          ir::rewrite(strides, exprs), layout, loc, auto_layout);
}

void AllocateGlobalInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(shape, fn);
  if (init) fn(init);
}

Inst AllocateGlobalInst::rewrite(const ExprMap& exprs, const VarMap&) const {
  return std::make_shared<AllocateGlobalInst>(dtype, ir::rewrite(shape, exprs), layout,
                                              ir::rewrite(init, exprs), loc);
}

void LoadInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(src, fn);
  ir::for_each_expr(offset, fn);
}

Inst LoadGlobalInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<LoadGlobalInst>(ir::rewrite(src, exprs, vars), layout, ir::rewrite(offset, exprs),
                                          ir::rewrite(out, vars), loc);
}

Inst LoadSharedInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<LoadSharedInst>(ir::rewrite(src, exprs, vars), layout, ir::rewrite(offset, exprs),
                                          ir::rewrite(out, vars), loc);
}

void StoreInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(src, fn);
  ir::for_each_expr(dst, fn);
  ir::for_each_expr(offset, fn);
}

Inst StoreGlobalInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  auto n = std::make_shared<StoreGlobalInst>(ir::rewrite(src, exprs, vars), ir::rewrite(dst, exprs, vars),
                                             ir::rewrite(offset, exprs), loc);
  n->canonicalizes_nan = canonicalizes_nan;
  return n;
}

Inst AtomicAddGlobalInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<AtomicAddGlobalInst>(ir::rewrite(src, exprs, vars), ir::rewrite(dst, exprs, vars),
                                               ir::rewrite(offset, exprs), loc);
}

void TakeTicketInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(counter, fn);
  fn(modulo);
  ir::for_each_expr(offset, fn);
}

Inst TakeTicketInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<TakeTicketInst>(ir::rewrite(counter, exprs, vars), ir::rewrite(offset, exprs),
                                          exprs(modulo), loc);
}

Inst StoreSharedInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<StoreSharedInst>(ir::rewrite(src, exprs, vars), ir::rewrite(dst, exprs, vars),
                                           ir::rewrite(offset, exprs), loc);
}

Inst AllocateSharedInst::rewrite(const ExprMap& exprs, const VarMap&) const {
  auto n = std::make_shared<AllocateSharedInst>(dtype, ir::rewrite(shape, exprs), layout, loc);
  n->placement = placement;
  return n;
}

Inst FreeSharedInst::rewrite(const ExprMap&, const VarMap& vars) const {
  return std::make_shared<FreeSharedInst>(vars(tensor), loc);
}

}  // namespace tilevm::ir
