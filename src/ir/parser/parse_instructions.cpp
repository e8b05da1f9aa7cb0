// Instruction calls: binding `Instr(args...)` to the instruction nodes of include/tilevm/ir/inst/.
//
// Each instruction has a parameter list (its row of the instruction table, inst_def.h): arguments are given
// positionally in that order or as `name=value`, keyword-only ones (`out=`) only as a keyword. What an
// argument is (a tensor, a scalar, a dtype, a layout, a list of scalars) comes from its parameter, so the
// same text binds differently in different places. The row builds the node.
#include <algorithm>

#include "parser_impl.h"
#include "tilevm/ir/inst/inst_def.h"
#include "tilevm/ir/inst_types.h"

namespace tilevm::ir::parser {

bool Parser::is_instruction(std::string_view name) {
  return find_inst_def(name) != nullptr;
}

Stmt Parser::bind_instruction(const std::vector<Target>& targets, const Syn& call, SourceLoc stmt_loc) {
  const InstDef* spec = find_inst_def(call.name);
  if (!spec) fail(call.loc, fmt::format("unknown instruction '{}'", call.name));
  const std::string& n = call.name;  // as written: an alias names itself in messages
  std::string param_names;
  for (const Param& p : spec->params) param_names += (param_names.empty() ? "" : ", ") + std::string(p.name);

  // Match the arguments to the parameters.
  std::vector<const SynArg*> slots(spec->params.size(), nullptr);
  size_t positional = 0;
  size_t max_positional = 0;
  for (const Param& p : spec->params) max_positional += p.keyword_only ? 0 : 1;
  for (const SynArg& a : call.args) {
    size_t index = 0;
    if (a.keyword.empty()) {
      if (positional >= max_positional) {
        fail(a.loc, fmt::format("{} takes {} positional argument{} ({}), got {}", n, max_positional,
                                max_positional == 1 ? "" : "s", param_names, call.args.size()));
      }
      index = positional++;
    } else {
      auto it = std::find_if(spec->params.begin(), spec->params.end(),
                             [&](const Param& p) { return a.keyword == p.name; });
      if (it == spec->params.end()) {
        fail(a.loc, spec->params.empty() ? fmt::format("{} takes no arguments", n)
                                         : fmt::format("{} has no argument '{}'; its arguments are {}", n,
                                                       a.keyword, param_names));
      }
      index = static_cast<size_t>(it - spec->params.begin());
      if (slots[index]) fail(a.loc, fmt::format("argument '{}' of {} is given twice", a.keyword, n));
    }
    slots[index] = &a;
  }

  // Bind each argument by its parameter's kind.
  InstArgs args(*spec);
  for (size_t i = 0; i < slots.size(); ++i) {
    const Param& p = spec->params[i];
    if (!slots[i]) {
      if (p.required) fail(call.loc, fmt::format("{} needs argument '{}'", n, p.name));
      continue;
    }
    const Syn& v = *slots[i]->value;
    ArgValue& b = args.at(i);
    b.present = true;
    switch (p.kind) {
      case ParamKind::Tensor:
        b.tensor = bind_tensor(v);
        break;
      case ParamKind::Operand:
        b.operand = bind_operand(v);
        break;
      case ParamKind::Scalar:
        b.expr = bind_scalar(v);
        break;
      case ParamKind::Pointer: {
        const Symbol* s = v.kind == SynKind::Name ? &lookup(v.name, v.loc) : nullptr;
        if (!s || s->kind != Symbol::Kind::Variable || !s->var->type.is_pointer()) {
          fail(v.loc, fmt::format("{} needs a pointer parameter as '{}'", n, p.name));
        }
        b.expr = make_var_ref(s->var, v.loc);
        break;
      }
      case ParamKind::DType:
        b.dtype = bind_dtype(v);
        break;
      case ParamKind::Layout:
        // `auto` is a keyword only where the parameter takes it (a named layout cannot be called auto).
        if (v.kind == SynKind::Name && v.name == "auto") {
          if (!p.takes_auto)
            fail(v.loc, fmt::format("'{}' of {} cannot be auto: only ViewGlobal's layout is chosen by the "
                                    "compiler (leave a fragment's or shared tile's layout out instead)",
                                    p.name, n));
          b.auto_layout = true;
          break;
        }
        b.layout = bind_layout(v);
        break;
      case ParamKind::List:
        if (v.kind != SynKind::List) fail(v.loc, fmt::format("'{}' of {} must be a list [...]", p.name, n));
        for (const SynPtr& item : v.operands) b.list.push_back(bind_scalar(*item));
        break;
      case ParamKind::Int:
        b.int_value = bind_const_int(v, fmt::format("'{}' of {}", p.name, n));
        if (b.int_value < -(int64_t{1} << 30) || b.int_value > (int64_t{1} << 30)) {
          fail(v.loc, fmt::format("'{}' of {} is out of range: {}", p.name, n, b.int_value));
        }
        break;
      case ParamKind::Bool: {
        Expr e = bind_constant(v, fmt::format("'{}' of {}", p.name, n));
        if (!e->as<BoolImm>()) fail(v.loc, fmt::format("'{}' of {} must be True or False", p.name, n));
        b.bool_value = e->as<BoolImm>()->value;
        break;
      }
      case ParamKind::TensorVar:
        if (v.kind != SynKind::Name) fail(v.loc, fmt::format("'{}' of {} must be a tensor name", p.name, n));
        b.var = bind_tensor_var(v, "a tensor");
        break;
    }
  }

  // Build the node: the row's construction (a missing one fails tests/unit/ir_inst_defs_test.cpp).
  SourceLoc l = call.loc;
  TILEVM_ASSERT(spec->build, "instruction '{}' has no construction", spec->name);
  Inst inst;
  try {
    inst = spec->build(args, l);
  } catch (const Error& e) {
    fail(l, e.what());
  }

  // The results: their types come from the operands.
  for (const Target& t : targets) {
    if (t.annotation) fail(t.loc, "a type annotation is only allowed on a scalar assignment");
  }
  auto types = infer_result_types(*inst, grid_rank_, diags_);
  if (!types) throw ParseAbort{};  // reported by infer_result_types
  std::vector<Var> results;
  if (!targets.empty()) {
    if (const Var out = out_operand(*inst)) {
      fail(targets[0].loc,
           fmt::format("{} with out= writes into '{}' and defines nothing; write it as a bare "
                       "statement",
                       n, out->name));
    }
    const auto expected = static_cast<size_t>(spec->result_count(grid_rank_));
    TILEVM_ASSERT(types->size() == expected, "{} has {} result types but its definition says {}", n,
                  types->size(), expected);
    if (expected != targets.size()) {
      fail(targets[0].loc,
           fmt::format("{} defines {} value{}, but {} name{} assigned", n, expected, expected == 1 ? "" : "s",
                       targets.size(), targets.size() == 1 ? " is" : "s are"));
    }
    for (size_t i = 0; i < targets.size(); ++i) results.push_back(define_var(targets[i], (*types)[i]));
  }
  return std::make_shared<InstStmt>(std::move(results), std::move(inst), stmt_loc);
}

}  // namespace tilevm::ir::parser
