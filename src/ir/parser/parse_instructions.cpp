// Instruction calls: binding `Instr(args...)` to the instruction nodes of include/tilevm/ir/inst/.
//
// Each instruction has a parameter list (docs/language.md): arguments are given positionally in that order
// or as `name=value`, `out=` only as a keyword. What an argument is (a tensor, a scalar, a dtype, a layout,
// a list of scalars) comes from its parameter, so the same text binds differently in different places.
#include <algorithm>

#include "parser_impl.h"
#include "tilevm/ir/inst_types.h"

namespace tilevm::ir::parser {
namespace {

enum class ArgKind {
  Tensor,     // a tensor operand, possibly subscripted
  Operand,    // a tensor operand or a scalar expression (broadcast)
  Scalar,     // a scalar expression
  Pointer,    // a pointer parameter
  DType,      // a data type name
  Layout,     // a layout expression or name
  List,       // [scalar, ...]
  Int,        // a constant integer
  Bool,       // True or False
  TensorVar,  // a plain tensor name (FreeShared's operand, out=)
};

struct Param {
  const char* name;
  ArgKind kind;
  bool required;
  bool keyword_only = false;
};

struct Spec {
  std::string name;
  std::vector<Param> params;
};

const Param kOut{"out", ArgKind::TensorVar, false, true};

const std::vector<Spec>& specs() {
  static const std::vector<Spec> table = [] {
    std::vector<Spec> t = {
        {"BlockIndices", {}},
        {"ViewGlobal",
         {{"ptr", ArgKind::Pointer, true},
          {"dtype", ArgKind::DType, true},
          {"shape", ArgKind::List, true},
          {"strides", ArgKind::List, false},
          {"layout", ArgKind::Layout, false}}},
        {"AllocateGlobal",
         {{"dtype", ArgKind::DType, true},
          {"shape", ArgKind::List, true},
          {"layout", ArgKind::Layout, false},
          {"init", ArgKind::Scalar, false}}},
        {"AllocateShared",
         {{"dtype", ArgKind::DType, true},
          {"shape", ArgKind::List, false},
          {"layout", ArgKind::Layout, false}}},
        {"FreeShared", {{"t", ArgKind::TensorVar, true}}},
        {"AllocateRegister",
         {{"dtype", ArgKind::DType, true},
          {"layout", ArgKind::Layout, true},
          {"init", ArgKind::Scalar, false}}},
        {"CopyAsync", {{"dst", ArgKind::Tensor, true}, {"src", ArgKind::Tensor, true}}},
        {"CopyAsyncCommitGroup", {}},
        {"CopyAsyncWaitGroup", {{"n", ArgKind::Scalar, true}}},
        {"Cast",
         {{"a", ArgKind::Tensor, true}, {"dtype", ArgKind::DType, true}, {"layout", ArgKind::Layout, false}, kOut}},
        {"View",
         {{"a", ArgKind::Tensor, true},
          {"dtype", ArgKind::DType, false},
          {"layout", ArgKind::Layout, false}}},
        {"Dot",
         {{"a", ArgKind::Tensor, true}, {"b", ArgKind::Tensor, true}, {"c", ArgKind::Tensor, true}, kOut}},
        {"Synchronize", {}},
        {"SyncThreads", {}},
        {"Exit", {}},
        {"Print", {{"x", ArgKind::Operand, true}}},
    };
    for (const char* load : {"LoadGlobal", "LoadShared"}) {
      t.push_back({load,
                   {{"src", ArgKind::Tensor, true},
                    {"layout", ArgKind::Layout, true},
                    {"offset", ArgKind::List, false},
                    kOut}});
    }
    for (const char* store : {"StoreGlobal", "StoreShared", "AtomicAddGlobal"}) {
      t.push_back({store,
                   {{"src", ArgKind::Tensor, true},
                    {"dst", ArgKind::Tensor, true},
                    {"offset", ArgKind::List, false}}});
    }
    for (int k = 0; k <= static_cast<int>(kLastElementwiseOp); ++k) {
      auto op = static_cast<ElementwiseOp>(k);
      std::vector<Param> params;
      if (op == ElementwiseOp::Where) params.push_back({"cond", ArgKind::Operand, true});
      const char* names[] = {"a", "b", "c"};
      const int named = op == ElementwiseOp::Where ? 2 : arity(op);
      for (int i = 0; i < named; ++i) params.push_back({names[i], ArgKind::Operand, true});
      params.push_back(kOut);
      t.push_back({to_string(op), params});
    }
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
      t.push_back({to_string(op),
                   {{"a", ArgKind::Tensor, true},
                    {"dim", ArgKind::Int, true},
                    {"keepdim", ArgKind::Bool, false},
                    kOut}});
    }
    return t;
  }();
  return table;
}

const Spec* find_spec(std::string_view name) {
  for (const Spec& s : specs()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// One bound argument; which field is set depends on the parameter's kind.
struct Bound {
  bool present = false;
  TensorArg tensor;
  Operand operand;
  Expr expr;
  DataType dtype = DataType::i32();
  std::optional<layout::Layout> layout;
  std::vector<Expr> list;
  int64_t int_value = 0;
  bool bool_value = false;
  Var var;
};

}  // namespace

bool Parser::is_instruction(std::string_view name) {
  return find_spec(name) != nullptr;
}

Stmt Parser::bind_instruction(const std::vector<Target>& targets, const Syn& call, SourceLoc stmt_loc) {
  const Spec* spec = find_spec(call.name);
  if (!spec) fail(call.loc, fmt::format("unknown instruction '{}'", call.name));
  const std::string& n = spec->name;
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
  std::map<std::string, Bound> bound;
  for (size_t i = 0; i < slots.size(); ++i) {
    const Param& p = spec->params[i];
    if (!slots[i]) {
      if (p.required) fail(call.loc, fmt::format("{} needs argument '{}'", n, p.name));
      continue;
    }
    const Syn& v = *slots[i]->value;
    Bound& b = bound[p.name];
    b.present = true;
    switch (p.kind) {
      case ArgKind::Tensor:
        b.tensor = bind_tensor(v);
        break;
      case ArgKind::Operand:
        b.operand = bind_operand(v);
        break;
      case ArgKind::Scalar:
        b.expr = bind_scalar(v);
        break;
      case ArgKind::Pointer: {
        const Symbol* s = v.kind == SynKind::Name ? &lookup(v.name, v.loc) : nullptr;
        if (!s || s->kind != Symbol::Kind::Variable || !s->var->type.is_pointer()) {
          fail(v.loc, fmt::format("{} needs a pointer parameter as '{}'", n, p.name));
        }
        b.expr = make_var_ref(s->var, v.loc);
        break;
      }
      case ArgKind::DType:
        b.dtype = bind_dtype(v);
        break;
      case ArgKind::Layout:
        b.layout = bind_layout(v);
        break;
      case ArgKind::List:
        if (v.kind != SynKind::List) fail(v.loc, fmt::format("'{}' of {} must be a list [...]", p.name, n));
        for (const SynPtr& item : v.operands) b.list.push_back(bind_scalar(*item));
        break;
      case ArgKind::Int:
        b.int_value = bind_const_int(v, fmt::format("'{}' of {}", p.name, n));
        if (b.int_value < -(int64_t{1} << 30) || b.int_value > (int64_t{1} << 30)) {
          fail(v.loc, fmt::format("'{}' of {} is out of range: {}", p.name, n, b.int_value));
        }
        break;
      case ArgKind::Bool: {
        Expr e = bind_constant(v, fmt::format("'{}' of {}", p.name, n));
        if (!e->as<BoolImm>()) fail(v.loc, fmt::format("'{}' of {} must be True or False", p.name, n));
        b.bool_value = e->as<BoolImm>()->value;
        break;
      }
      case ArgKind::TensorVar:
        if (v.kind != SynKind::Name) fail(v.loc, fmt::format("'{}' of {} must be a tensor name", p.name, n));
        b.var = bind_tensor_var(v, "a tensor");
        break;
    }
  }

  // Build the node.
  SourceLoc l = call.loc;
  Inst inst;
  auto& a = bound;
  if (n == "BlockIndices") {
    inst = std::make_shared<BlockIndicesInst>(l);
  } else if (n == "ViewGlobal") {
    if (a["strides"].present && a["layout"].present)
      fail(l, "ViewGlobal takes strides= or layout=, not both");
    inst = std::make_shared<ViewGlobalInst>(a["ptr"].expr, a["dtype"].dtype, a["shape"].list,
                                            a["strides"].list, a["layout"].layout, l);
  } else if (n == "AllocateGlobal") {
    inst = std::make_shared<AllocateGlobalInst>(a["dtype"].dtype, a["shape"].list, a["layout"].layout,
                                                a["init"].expr, l);
  } else if (n == "AllocateShared") {
    if (a["shape"].present == a["layout"].present) fail(l, "AllocateShared takes either shape= or layout=");
    inst = std::make_shared<AllocateSharedInst>(a["dtype"].dtype, a["shape"].list, a["layout"].layout, l);
  } else if (n == "FreeShared") {
    inst = std::make_shared<FreeSharedInst>(a["t"].var, l);
  } else if (n == "AllocateRegister") {
    inst = std::make_shared<AllocateRegisterInst>(a["dtype"].dtype, *a["layout"].layout, a["init"].expr, l);
  } else if (n == "LoadGlobal") {
    inst = std::make_shared<LoadGlobalInst>(a["src"].tensor, *a["layout"].layout, a["offset"].list,
                                            a["out"].var, l);
  } else if (n == "LoadShared") {
    inst = std::make_shared<LoadSharedInst>(a["src"].tensor, *a["layout"].layout, a["offset"].list,
                                            a["out"].var, l);
  } else if (n == "StoreGlobal") {
    inst = std::make_shared<StoreGlobalInst>(a["src"].tensor, a["dst"].tensor, a["offset"].list, l);
  } else if (n == "StoreShared") {
    inst = std::make_shared<StoreSharedInst>(a["src"].tensor, a["dst"].tensor, a["offset"].list, l);
  } else if (n == "AtomicAddGlobal") {
    inst = std::make_shared<AtomicAddGlobalInst>(a["src"].tensor, a["dst"].tensor, a["offset"].list, l);
  } else if (n == "CopyAsync") {
    inst = std::make_shared<CopyAsyncInst>(a["dst"].tensor, a["src"].tensor, l);
  } else if (n == "CopyAsyncCommitGroup") {
    inst = std::make_shared<CopyAsyncCommitGroupInst>(l);
  } else if (n == "CopyAsyncWaitGroup") {
    inst = std::make_shared<CopyAsyncWaitGroupInst>(a["n"].expr, l);
  } else if (n == "Cast") {
    inst = std::make_shared<CastInst>(a["a"].tensor, a["dtype"].dtype, a["out"].var, l, a["layout"].layout);
  } else if (n == "View") {
    std::optional<DataType> dtype;
    if (a["dtype"].present) dtype = a["dtype"].dtype;
    inst = std::make_shared<ViewInst>(a["a"].tensor, dtype, a["layout"].layout, l);
  } else if (n == "Dot") {
    inst = std::make_shared<DotInst>(a["a"].tensor, a["b"].tensor, a["c"].tensor, a["out"].var, l);
  } else if (n == "Synchronize" || n == "SyncThreads") {
    inst = std::make_shared<SynchronizeInst>(l);
  } else if (n == "Exit") {
    inst = std::make_shared<ExitInst>(l);
  } else if (n == "Print") {
    inst = std::make_shared<PrintInst>(a["x"].operand, l);
  } else if (n.rfind("Reduce", 0) == 0) {
    ReduceOp op = n == "ReduceSum" ? ReduceOp::Sum : n == "ReduceMax" ? ReduceOp::Max : ReduceOp::Min;
    inst = std::make_shared<ReduceInst>(op, a["a"].tensor, static_cast<int>(a["dim"].int_value),
                                        a["keepdim"].bool_value, a["out"].var, l);
  } else {
    ElementwiseOp op = ElementwiseOp::Add;
    for (int k = 0; k <= static_cast<int>(kLastElementwiseOp); ++k) {
      if (n == to_string(static_cast<ElementwiseOp>(k))) op = static_cast<ElementwiseOp>(k);
    }
    std::vector<Operand> operands;
    for (const char* key : {"cond", "a", "b", "c"}) {
      if (a.count(key) && a[key].present) operands.push_back(a[key].operand);
    }
    inst = std::make_shared<ElementwiseInst>(op, operands, a["out"].var, l);
  }

  // The results: their types come from the operands.
  for (const Target& t : targets) {
    if (t.annotation) fail(t.loc, "a type annotation is only allowed on a scalar assignment");
  }
  auto types = infer_result_types(*inst, grid_rank_, diags_);
  if (!types) throw ParseAbort{};  // reported by infer_result_types
  std::vector<Var> results;
  if (!targets.empty()) {
    if (a.count("out") && a["out"].present) {
      fail(targets[0].loc,
           fmt::format("{} with out= writes into '{}' and defines nothing; write it as a bare "
                       "statement",
                       n, a["out"].var->name));
    }
    if (types->size() != targets.size()) {
      fail(targets[0].loc,
           fmt::format("{} defines {} value{}, but {} name{} assigned", n, types->size(),
                       types->size() == 1 ? "" : "s", targets.size(), targets.size() == 1 ? " is" : "s are"));
    }
    for (size_t i = 0; i < targets.size(); ++i) results.push_back(define_var(targets[i], (*types)[i]));
  }
  return std::make_shared<InstStmt>(std::move(results), std::move(inst), stmt_loc);
}

}  // namespace tilevm::ir::parser
