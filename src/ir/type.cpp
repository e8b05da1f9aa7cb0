#include "tilevm/ir/type.h"

#include <fmt/format.h>

#include "tilevm/ir/printer.h"

namespace tilevm::ir {

const char* to_string(Scope scope) {
  switch (scope) {
    case Scope::Global:
      return "global";
    case Scope::Shared:
      return "shared";
    case Scope::Register:
      return "register";
    case Scope::Barrier:
      return "barrier";
  }
  return "?";
}

std::optional<layout::Index> TensorType::static_shape() const {
  layout::Index out;
  for (const Expr& e : shape) {
    auto v = as_const_int(e);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

Var make_var(std::string name, ValueType type, SourceLoc loc) {
  return std::make_shared<const VarNode>(VarNode{std::move(name), std::move(type), loc});
}

std::string to_string(const ValueType& type) {
  switch (type.kind) {
    case ValueKind::Scalar:
      return type.dtype.name();
    case ValueKind::Pointer:
      return type.dtype.name() + "*";
    case ValueKind::Tensor: {
      std::string dims;
      for (const Expr& e : type.tensor->shape) dims += (dims.empty() ? "" : ", ") + print_expr(e);
      return fmt::format("{} {}[{}]", to_string(type.tensor->scope), type.dtype.name(), dims);
    }
  }
  return "?";
}

}  // namespace tilevm::ir
