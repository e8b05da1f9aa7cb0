// Lookups into the instruction table (inst_defs.cpp) and what InstNode derives from its row.
#include "tilevm/ir/inst/inst_def.h"

#include <map>

#include "tilevm/ir/inst/elementwise.h"
#include "tilevm/ir/inst/reduce.h"
#include "tilevm/support/error.h"

namespace tilevm::ir {
namespace {

struct Index {
  std::map<std::string, const InstDef*, std::less<>> by_name;  // names and aliases
  std::map<InstKind, std::vector<const InstDef*>> by_kind;     // indexed by InstDef::op
};

const Index& table_index() {
  static const Index ix = [] {
    Index x;
    for (const InstDef& d : inst_defs()) {
      for (const std::string& name : d.aliases) x.by_name.emplace(name, &d);
      TILEVM_ASSERT(x.by_name.emplace(d.name, &d).second, "instruction '{}' is defined twice", d.name);
      auto& ops = x.by_kind[d.kind];
      if (ops.size() <= static_cast<size_t>(d.op)) ops.resize(static_cast<size_t>(d.op) + 1, nullptr);
      TILEVM_ASSERT(!ops[static_cast<size_t>(d.op)], "'{}' and '{}' define the same node", d.name,
                    ops[static_cast<size_t>(d.op)]->name);
      ops[static_cast<size_t>(d.op)] = &d;
    }
    return x;
  }();
  return ix;
}

// The variable a bound argument names, or null.
Var var_of(ParamKind kind, const ArgValue& v) {
  if (!v.present) return nullptr;
  switch (kind) {
    case ParamKind::Tensor:
      return v.tensor.tensor;
    case ParamKind::Operand:
      return v.operand.tensor ? v.operand.tensor->tensor : nullptr;
    case ParamKind::Pointer: {
      const auto* ref = v.expr ? v.expr->as<VarRef>() : nullptr;
      return ref ? ref->var : nullptr;
    }
    case ParamKind::TensorVar:
      return v.var;
    case ParamKind::Scalar:
    case ParamKind::DType:
    case ParamKind::Layout:
    case ParamKind::List:
    case ParamKind::Int:
    case ParamKind::Bool:
      return nullptr;
  }
  return nullptr;
}

// The variable operands whose parameter's access passes `keep`, in parameter order.
template <typename Keep>
std::vector<Var> vars(const InstNode& inst, Keep keep) {
  const InstArgs args = inst_args(inst);
  const std::vector<Param>& params = args.def().params;
  std::vector<Var> out;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!keep(params[i].access)) continue;
    if (Var v = var_of(params[i].kind, args.at(i))) out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

InstArgs::InstArgs(const InstDef& def) : def_(&def), values_(def.params.size()) {}

ArgValue& InstArgs::operator[](std::string_view param) {
  const int i = def_->param_index(param);
  TILEVM_ASSERT(i >= 0, "{} has no parameter '{}'", def_->name, param);
  return values_[static_cast<size_t>(i)];
}

const ArgValue& InstArgs::operator[](std::string_view param) const {
  return const_cast<InstArgs&>(*this)[param];
}

int InstDef::param_index(std::string_view name) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (name == params[i].name) return static_cast<int>(i);
  return -1;
}

int InstDef::result_count(int grid_rank) const {
  switch (results) {
    case Results::None:
      return 0;
    case Results::One:
      return 1;
    case Results::PerGridDim:
      return grid_rank;
    case Results::Two:
      return 2;
  }
  return 0;
}

bool InstDef::has_effects() const {
  return effects.global_memory || effects.output || effects.barrier || effects.commit_group ||
         effects.wait_group || effects.exits;
}

const InstDef* find_inst_def(std::string_view name) {
  const auto& m = table_index().by_name;
  auto it = m.find(name);
  return it == m.end() ? nullptr : it->second;
}

const InstDef& inst_def(InstKind kind, int op) {
  const auto& m = table_index().by_kind;
  auto it = m.find(kind);
  const InstDef* d = nullptr;
  if (it != m.end() && op >= 0 && static_cast<size_t>(op) < it->second.size())
    d = it->second[static_cast<size_t>(op)];
  TILEVM_ASSERT(d, "no instruction definition for kind {} op {}", static_cast<int>(kind), op);
  return *d;
}

InstArgs inst_args(const InstNode& inst) {
  const InstDef& d = inst.def();
  InstArgs args(d);
  d.args(inst, args);
  return args;
}

Var out_operand(const InstNode& inst) {
  const InstDef& d = inst.def();
  const int i = d.param_index("out");
  if (i < 0) return nullptr;
  return inst_args(inst).at(static_cast<size_t>(i)).var;
}

const InstDef& InstNode::def() const {
  return inst_def(kind, op_index());
}

const std::string& InstNode::name() const {
  return def().name;
}

std::vector<Var> InstNode::used_vars() const {
  return vars(*this, [](Access) { return true; });
}

std::vector<Var> InstNode::reads() const {
  return vars(*this, [](Access a) { return a == Access::Read || a == Access::ReadWrite; });
}

std::vector<Var> InstNode::writes() const {
  return vars(*this, [](Access a) {
    return a == Access::Write || a == Access::ReadWrite || a == Access::AsyncWrite || a == Access::Free;
  });
}

const char* to_string(ElementwiseOp op) {
  return inst_def(InstKind::Elementwise, static_cast<int>(op)).name.c_str();
}

int arity(ElementwiseOp op) {
  return static_cast<int>(inst_def(InstKind::Elementwise, static_cast<int>(op)).params.size()) -
         1;  // less out=
}

const char* to_string(ReduceOp op) {
  return inst_def(InstKind::Reduce, static_cast<int>(op)).name.c_str();
}

}  // namespace tilevm::ir
