// Host evaluation of launch expressions (host_eval.h).
#include "host_eval.h"

#include <algorithm>
#include <cmath>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/type.h"
#include "tilevm/support/error.h"

namespace tilevm::codegen::cuda {

// Host value of a scalar expression over the scalar parameters (integers exact; floats as double).
double eval_host(const ir::Expr& e, const ScalarLookup& lookup) {
  switch (e->kind) {
    case ir::ExprKind::IntImm:
      return static_cast<double>(e->as<ir::IntImm>()->value);
    case ir::ExprKind::FloatImm:
      return e->as<ir::FloatImm>()->value;
    case ir::ExprKind::BoolImm:
      return e->as<ir::BoolImm>()->value ? 1 : 0;
    case ir::ExprKind::VarRef: {
      const auto& var = e->as<ir::VarRef>()->var;
      const std::optional<double> v = lookup(var->name);
      if (!v)
        fail("'{}' is needed on the host (a grid extent or workspace shape) but is not a scalar argument",
             var->name);
      return *v;
    }
    case ir::ExprKind::Unary: {
      const auto* u = e->as<ir::UnaryExpr>();
      const double a = eval_host(u->a, lookup);
      return u->op == ir::UnaryOp::Neg ? -a : (a == 0 ? 1 : 0);
    }
    case ir::ExprKind::Binary: {
      const auto* b = e->as<ir::BinaryExpr>();
      const double x = eval_host(b->a, lookup), y = eval_host(b->b, lookup);
      const bool integer = !e->type.is_float();
      const auto xi = static_cast<int64_t>(x), yi = static_cast<int64_t>(y);
      switch (b->op) {
        case ir::BinaryOp::Add:
          return x + y;
        case ir::BinaryOp::Sub:
          return x - y;
        case ir::BinaryOp::Mul:
          return x * y;
        case ir::BinaryOp::Div:
          if (integer) return yi == 0 ? 0 : static_cast<double>(xi / yi);
          return x / y;
        case ir::BinaryOp::Mod:
          return integer ? (yi == 0 ? 0 : static_cast<double>(xi % yi)) : std::fmod(x, y);
        case ir::BinaryOp::Shl:
          return static_cast<double>(xi << yi);
        case ir::BinaryOp::Shr:
          return static_cast<double>(xi >> yi);
        case ir::BinaryOp::BitAnd:
          return static_cast<double>(xi & yi);
        case ir::BinaryOp::BitOr:
          return static_cast<double>(xi | yi);
        case ir::BinaryOp::BitXor:
          return static_cast<double>(xi ^ yi);
        case ir::BinaryOp::Lt:
          return x < y;
        case ir::BinaryOp::Le:
          return x <= y;
        case ir::BinaryOp::Gt:
          return x > y;
        case ir::BinaryOp::Ge:
          return x >= y;
        case ir::BinaryOp::Eq:
          return x == y;
        case ir::BinaryOp::Ne:
          return x != y;
        case ir::BinaryOp::And:
          return x != 0 && y != 0;
        case ir::BinaryOp::Or:
          return x != 0 || y != 0;
        case ir::BinaryOp::Min:
          return std::min(x, y);
        case ir::BinaryOp::Max:
          return std::max(x, y);
        case ir::BinaryOp::CeilDiv:
          return yi == 0 ? 0 : static_cast<double>((xi + yi - 1) / yi);
      }
    }
  }
  return 0;
}

int64_t eval_host_int(const ir::Expr& e, const ScalarLookup& lookup) {
  return static_cast<int64_t>(eval_host(e, lookup));
}

int64_t workspace_elements(const WorkspaceTensor& w, const ScalarLookup& lookup) {
  const auto& n = *w.inst->as<ir::AllocateGlobalInst>();
  if (n.layout) return n.layout->num_locals();
  int64_t elements = 1;
  for (const ir::Expr& e : n.shape) elements *= eval_host_int(e, lookup);
  return elements;
}

}  // namespace tilevm::codegen::cuda
