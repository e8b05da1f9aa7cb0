// Host evaluation of launch expressions (host_eval.h).
#include "host_eval.h"

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/type.h"
#include "tilevm/support/error.h"
#include "tilevm/support/int_math.h"

namespace tilevm::exec {

interp::ScalarValue eval_host(const ir::Expr& e, const ScalarLookup& lookup) {
  return interp::eval_scalar(e, [&](const ir::Var& var, SourceLoc) {
    const std::optional<interp::ScalarValue> v = lookup(var->name);
    if (!v)
      fail("'{}' is needed on the host (a grid extent or workspace shape) but is not a scalar argument",
           var->name);
    return *v;
  });
}

int64_t eval_host_int(const ir::Expr& e, const ScalarLookup& lookup) {
  const interp::ScalarValue v = eval_host(e, lookup);
  return v.is_float ? static_cast<int64_t>(v.f) : v.i;
}

int64_t workspace_elements(const WorkspaceTensor& w, const ScalarLookup& lookup) {
  const auto& n = *w.inst->as<ir::AllocateGlobalInst>();
  if (n.layout) return n.layout->num_locals();
  int64_t elements = 1;
  for (const ir::Expr& e : n.shape) {
    const int64_t extent = eval_host_int(e, lookup);
    const std::optional<int64_t> product = checked_mul(elements, extent);
    if (extent < 0 || !product)
      fail("the workspace tensor at {}:{} has a negative extent or more than 2^63 elements", n.loc.line,
           n.loc.col);
    elements = *product;
  }
  return elements;
}

}  // namespace tilevm::exec
