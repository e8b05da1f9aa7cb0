#include "tilevm/ir/inst/inst.h"

#include "tilevm/support/error.h"

namespace tilevm::ir {

const TensorType& TensorArg::type() const {
  TILEVM_ASSERT(tensor && tensor->type.is_tensor(), "tensor operand '{}' is not a tensor",
                tensor ? tensor->name : "");
  return *tensor->type.tensor;
}

std::optional<layout::Index> TensorArg::static_view_shape() const {
  const std::optional<layout::Index> full = type().static_shape();
  if (!full) return std::nullopt;
  layout::Index out;
  for (size_t d = 0; d < full->size(); ++d)
    if (d >= slices.size() || slices[d].kind != Slice::Kind::Index) out.push_back((*full)[d]);
  return out;
}

void for_each_expr(const TensorArg& arg, const ExprFn& fn) {
  for (const Slice& s : arg.slices)
    if (s.value) fn(s.value);
}

void for_each_expr(const Operand& op, const ExprFn& fn) {
  if (op.tensor) for_each_expr(*op.tensor, fn);
  if (op.scalar) fn(op.scalar);
}

void for_each_expr(const std::vector<Expr>& exprs, const ExprFn& fn) {
  for (const Expr& e : exprs)
    if (e) fn(e);
}

TensorArg rewrite(const TensorArg& arg, const ExprMap& exprs, const VarMap& vars) {
  TensorArg out = arg;
  out.tensor = vars(arg.tensor);
  for (Slice& s : out.slices)
    if (s.value) s.value = exprs(s.value);
  return out;
}

Operand rewrite(const Operand& op, const ExprMap& exprs, const VarMap& vars) {
  Operand out;
  if (op.tensor) out.tensor = rewrite(*op.tensor, exprs, vars);
  if (op.scalar) out.scalar = exprs(op.scalar);
  return out;
}

std::vector<Expr> rewrite(const std::vector<Expr>& v, const ExprMap& exprs) {
  std::vector<Expr> out;
  out.reserve(v.size());
  for (const Expr& e : v) out.push_back(e ? exprs(e) : e);
  return out;
}

}  // namespace tilevm::ir
