// The register-tensor and compute instruction nodes (register_tensor.h, elementwise.h, reduce.h, dot.h).
#include "tilevm/ir/inst/dot.h"
#include "tilevm/ir/inst/elementwise.h"
#include "tilevm/ir/inst/reduce.h"
#include "tilevm/ir/inst/register_tensor.h"

namespace tilevm::ir {
namespace {

std::vector<Var> with_out(std::vector<Var> vars, const Var& out) {
  if (out) vars.push_back(out);
  return vars;
}

}  // namespace

Inst AllocateRegisterInst::rewrite(const ExprMap& exprs, const VarMap&) const {
  return std::make_shared<AllocateRegisterInst>(dtype, layout, ir::rewrite(init, exprs), loc);
}

std::vector<Var> CastInst::used_vars() const { return with_out({src.tensor}, out); }

Inst CastInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  auto n =
      std::make_shared<CastInst>(ir::rewrite(src, exprs, vars), dtype, ir::rewrite(out, vars), loc, layout);
  n->nan_payload_unobserved = nan_payload_unobserved;
  return n;
}

Inst ViewInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<ViewInst>(ir::rewrite(src, exprs, vars), dtype, layout, loc);
}

const char* to_string(ElementwiseOp op) {
  static const char* names[] = {"Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Neg", "Abs", "Exp", "Exp2",
                                "Log", "Sqrt", "Rsqrt", "Lt", "Le", "Gt", "Ge", "Eq", "Ne", "Where", "Fma"};
  return names[static_cast<int>(op)];
}

int arity(ElementwiseOp op) {
  if (op == ElementwiseOp::Where || op == ElementwiseOp::Fma) return 3;
  if (op >= ElementwiseOp::Neg && op <= ElementwiseOp::Rsqrt) return 1;
  return 2;
}

bool is_comparison(ElementwiseOp op) { return op >= ElementwiseOp::Lt && op <= ElementwiseOp::Ne; }

void ElementwiseInst::for_each_expr(const ExprFn& fn) const {
  for (const Operand& a : args) ir::for_each_expr(a, fn);
}

std::vector<Var> ElementwiseInst::used_vars() const {
  std::vector<Var> vars;
  for (const Operand& a : args)
    if (a.tensor) vars.push_back(a.tensor->tensor);
  return with_out(vars, out);
}

Inst ElementwiseInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  std::vector<Operand> new_args;
  for (const Operand& a : args) new_args.push_back(ir::rewrite(a, exprs, vars));
  auto n = std::make_shared<ElementwiseInst>(op, std::move(new_args), ir::rewrite(out, vars), loc);
  n->nan_payload_unobserved = nan_payload_unobserved;
  return n;
}

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "ReduceSum";
    case ReduceOp::Max: return "ReduceMax";
    case ReduceOp::Min: return "ReduceMin";
  }
  return "?";
}

std::vector<Var> ReduceInst::used_vars() const { return with_out({src.tensor}, out); }

Inst ReduceInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<ReduceInst>(op, ir::rewrite(src, exprs, vars), dim, keepdim, ir::rewrite(out, vars), loc);
}

void DotInst::for_each_expr(const ExprFn& fn) const {
  ir::for_each_expr(a, fn);
  ir::for_each_expr(b, fn);
  ir::for_each_expr(c, fn);
}

std::vector<Var> DotInst::used_vars() const { return with_out({a.tensor, b.tensor, c.tensor}, out); }

Inst DotInst::rewrite(const ExprMap& exprs, const VarMap& vars) const {
  return std::make_shared<DotInst>(ir::rewrite(a, exprs, vars), ir::rewrite(b, exprs, vars),
                                   ir::rewrite(c, exprs, vars), ir::rewrite(out, vars), loc);
}

}  // namespace tilevm::ir
