// The register-tensor and compute instruction nodes (register_tensor.h, elementwise.h, reduce.h, dot.h).
#include "tilevm/ir/inst/dot.h"
#include "tilevm/ir/inst/elementwise.h"
#include "tilevm/ir/inst/reduce.h"
#include "tilevm/ir/inst/register_tensor.h"

namespace tilevm::ir {

Inst AllocateRegisterInst::rewrite(const ExprMap& exprs, const VarMap&) const {
  return std::make_shared<AllocateRegisterInst>(dtype, layout, ir::rewrite(init, exprs), loc);
}

Inst IotaInst::rewrite(const ExprMap&, const VarMap&) const {
  return std::make_shared<IotaInst>(dtype, layout, dim, loc);
}

Inst CastInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  auto n =
      std::make_shared<CastInst>(ir::rewrite(src, exprs, vars), dtype, ir::rewrite(out, vars), loc, layout);
  n->nan_payload_unobserved = nan_payload_unobserved;
  return n;
}

Inst ViewInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<ViewInst>(ir::rewrite(src, exprs, vars), dtype, layout, loc);
}

bool is_comparison(ElementwiseOp op) {
  return op >= ElementwiseOp::Lt && op <= ElementwiseOp::Ne;
}

bool is_float_only(ElementwiseOp op) {
  return op >= ElementwiseOp::Exp && op <= ElementwiseOp::Tanh;
}

void ElementwiseInst::for_each_expr(const ExprFn& fn) const {
  for (const Operand& a : args) ir::for_each_expr(a, fn);
}

Inst ElementwiseInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  std::vector<Operand> new_args;
  for (const Operand& a : args) new_args.push_back(ir::rewrite(a, exprs, vars));
  auto n = std::make_shared<ElementwiseInst>(op, std::move(new_args), ir::rewrite(out, vars), loc);
  n->nan_payload_unobserved = nan_payload_unobserved;
  return n;
}

Inst ReduceInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<ReduceInst>(op, ir::rewrite(src, exprs, vars), dim, keepdim, ir::rewrite(out, vars),
                                      loc);
}

void DotInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(a, fn);
  ir::for_each_expr(b, fn);
  ir::for_each_expr(c, fn);
}

Inst DotInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<DotInst>(ir::rewrite(a, exprs, vars), ir::rewrite(b, exprs, vars),
                                   ir::rewrite(c, exprs, vars), ir::rewrite(out, vars), loc, transpose_a,
                                   transpose_b);
}

void DotAsyncInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(a, fn);
  ir::for_each_expr(b, fn);
  ir::for_each_expr(c, fn);
}

Inst DotAsyncInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<DotAsyncInst>(ir::rewrite(a, exprs, vars), ir::rewrite(b, exprs, vars),
                                        ir::rewrite(c, exprs, vars), transpose_a, transpose_b, loc);
}

Inst DotAsyncWaitInst::rewrite(const ExprMap&, const VarMap&) const {
  return std::make_shared<DotAsyncWaitInst>(pending, loc);
}

}  // namespace tilevm::ir
