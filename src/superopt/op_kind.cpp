// The operator table of superoptimizer graphs: names and the levels each operator may appear at.
#include "tilevm/superopt/op_kind.h"

#include <array>

namespace tilevm::superopt {

namespace {

struct OpInfo {
  OpKind kind;
  std::string_view name;
  bool kernel, block, thread;
};

constexpr std::array<OpInfo, 20> kOps = {{
    {OpKind::Input, "input", true, false, true},
    {OpKind::Const, "const", true, true, true},
    {OpKind::Matmul, "matmul", true, true, false},
    {OpKind::Add, "add", true, true, true},
    {OpKind::Mul, "mul", true, true, true},
    {OpKind::Div, "div", true, true, true},
    {OpKind::Exp, "exp", true, true, true},
    {OpKind::Sqrt, "sqrt", true, true, true},
    {OpKind::Square, "square", true, true, true},
    {OpKind::Silu, "silu", true, true, true},
    {OpKind::Gelu, "gelu", true, true, true},
    {OpKind::Relu, "relu", true, true, true},
    {OpKind::Sum, "sum", true, true, false},
    {OpKind::Concat, "concat", true, true, false},
    {OpKind::RmsNorm, "rms_norm", true, false, false},
    {OpKind::Block, "block", true, false, false},
    {OpKind::Iter, "iter", false, true, false},
    {OpKind::Accum, "accum", false, true, false},
    {OpKind::Save, "save", false, true, false},
    {OpKind::Thread, "thread", false, true, false},
}};

// info() indexes kOps by the enumerator's value: the table must list every kind in declaration order.
constexpr bool in_declaration_order() {
  for (size_t i = 0; i < kOps.size(); ++i)
    if (static_cast<size_t>(kOps[i].kind) != i) return false;
  return kOps.size() == static_cast<size_t>(OpKind::Thread) + 1;
}
static_assert(in_declaration_order(), "kOps must list every OpKind in declaration order");

const OpInfo& info(OpKind kind) {
  return kOps[static_cast<size_t>(kind)];
}

}  // namespace

std::string_view op_name(OpKind kind) {
  return info(kind).name;
}

std::optional<OpKind> op_from_name(std::string_view name) {
  for (const OpInfo& op : kOps)
    if (op.name == name) return op.kind;
  return std::nullopt;
}

std::string_view level_name(Level level) {
  switch (level) {
    case Level::Kernel:
      return "kernel";
    case Level::Block:
      return "block";
    case Level::Thread:
      return "thread";
  }
  return "?";
}

bool allowed_at(OpKind kind, Level level) {
  const OpInfo& op = info(kind);
  return level == Level::Kernel ? op.kernel : level == Level::Block ? op.block : op.thread;
}

bool is_unary(OpKind kind) {
  switch (kind) {
    case OpKind::Exp:
    case OpKind::Sqrt:
    case OpKind::Square:
    case OpKind::Silu:
    case OpKind::Gelu:
    case OpKind::Relu:
      return true;
    default:
      return false;
  }
}

bool is_elementwise_binary(OpKind kind) {
  return kind == OpKind::Add || kind == OpKind::Mul || kind == OpKind::Div;
}

bool is_uninterpreted(OpKind kind) {
  return kind == OpKind::Sqrt || kind == OpKind::Silu || kind == OpKind::Gelu || kind == OpKind::Relu;
}

}  // namespace tilevm::superopt
