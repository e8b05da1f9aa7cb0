// analyze_nan_payload (analyze_nan_payload.h): a walk over the writers finds the f32 variables whose stores
// may make the NaN canonical themselves, one over the readers collects the variables that some reader
// observes the NaN bits of, and a last marks the native arithmetic and widening casts whose result is not
// one of them and the f32 stores of those variables.
#include "tilevm/transform/analyze_nan_payload.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/mutator.h"
#include "tilevm/ir/visitor.h"

namespace tilevm::transform {

namespace {

bool is_float_16_or_32(DataType t) {
  return t == DataType::f32() || t == DataType::f16() || t == DataType::bf16();
}

const ir::Var& result_of(const ir::InstStmt& s, const ir::Var& out) {
  return out ? out : s.results.at(0);
}

// The readers that map every NaN operand to the same result (see the header).
bool ignores_nan_bits(const ir::InstStmt& s) {
  const ir::InstNode& inst = *s.inst;
  if (const auto* e = inst.as<ir::ElementwiseInst>())
    return is_native_float_arith(*e, result_of(s, e->out)->type.dtype);
  if (const auto* c = inst.as<ir::CastInst>()) {
    const DataType from = c->src.type().dtype;
    return from == DataType::f32() && (c->dtype == DataType::f16() || c->dtype == DataType::bf16());
  }
  return inst.as<ir::DotInst>() != nullptr || inst.as<ir::DotAsyncInst>() != nullptr;
}

// Whether the code generator may leave the hardware's NaN in this instruction's result at all.
bool may_produce_hardware_nan(const ir::InstStmt& s) {
  if (const auto* e = s.inst->as<ir::ElementwiseInst>())
    return is_native_float_arith(*e, result_of(s, e->out)->type.dtype);
  if (const auto* c = s.inst->as<ir::CastInst>()) {
    const DataType from = c->src.type().dtype;
    return c->dtype == DataType::f32() && (from == DataType::f16() || from == DataType::bf16());
  }
  return false;
}

// A View, a StoreShared, a LoadShared and a Cast to the source's own type (a slot copy, which the tile
// layer's Parallel lowering writes into a fragment with `out=`) pass bits on unchanged: {from, to}, else
// {nullptr, nullptr}.
std::pair<const ir::VarNode*, const ir::VarNode*> passes_bits(const ir::InstStmt& s) {
  const ir::InstNode& inst = *s.inst;
  if (const auto* v = inst.as<ir::ViewInst>())
    return {v->src.tensor.get(), s.results.empty() ? nullptr : s.results[0].get()};
  if (const auto* st = inst.as<ir::StoreSharedInst>()) return {st->src.tensor.get(), st->dst.tensor.get()};
  if (const auto* ld = inst.as<ir::LoadSharedInst>())
    return {ld->src.tensor.get(), result_of(s, ld->out).get()};
  if (const auto* c = inst.as<ir::CastInst>(); c && c->src.type().dtype == c->dtype)
    return {c->src.tensor.get(), result_of(s, c->out).get()};
  return {nullptr, nullptr};
}

// The f32 variables whose every value is one the interpreter gives a canonical NaN and some may hold the
// hardware's: every writer is native f32 arithmetic or a widening Cast (may_produce_hardware_nan), an
// allocation, or an f32 -> f32 passing of the bits of another such variable, and one is not an allocation. An
// f32 StoreGlobal of one of these may make the NaN canonical itself; of any other (a tile loaded from memory,
// whose NaNs keep their bits in the interpreter; a shared tensor that also receives such a tile; a View of
// f16 words) it observes the bits as they are. Computed as the largest such set: the f32 variables without
// another writer, less those that take bits from one outside it, until none does.
class Deferrable : public ir::IRVisitor {
 public:
  void visit_inst_stmt(const ir::InstStmt& s) override {
    const auto [from, to] = passes_bits(s);
    std::vector<ir::Var> written = s.inst->writes();
    written.insert(written.end(), s.results.begin(), s.results.end());
    for (const ir::Var& w : written) {
      if (!w || w->type.dtype != DataType::f32()) continue;
      // An allocation writes no value that could hold the hardware's NaN (register tensors' init is a
      // constant; shared tensors start unwritten): neither for nor against.
      if (s.inst->as<ir::AllocateRegisterInst>() || s.inst->as<ir::AllocateSharedInst>()) continue;
      if (may_produce_hardware_nan(s)) {
        candidates_.insert(w.get());
      } else if (w.get() == to && from && from->type.dtype == DataType::f32()) {
        candidates_.insert(w.get());
        sources_[w.get()].push_back(from);
      } else {
        other_writer_.insert(w.get());
      }
    }
    IRVisitor::visit_inst_stmt(s);
  }

  std::unordered_set<const ir::VarNode*> vars() const {
    std::unordered_set<const ir::VarNode*> in;
    for (const ir::VarNode* v : candidates_)
      if (!other_writer_.count(v)) in.insert(v);
    for (bool shrank = true; shrank;) {
      shrank = false;
      for (const auto& [to, froms] : sources_)
        if (in.count(to) &&
            std::any_of(froms.begin(), froms.end(), [&](const ir::VarNode* f) { return in.count(f) == 0; })) {
          in.erase(to);
          shrank = true;
        }
    }
    return in;
  }

 private:
  std::unordered_set<const ir::VarNode*> candidates_, other_writer_;
  std::unordered_map<const ir::VarNode*, std::vector<const ir::VarNode*>> sources_;
};

// The variables some reader observes the NaN bits of. A View, a StoreShared, a LoadShared and a slot copy
// pass bits on (passes_bits): their source is observed only where what they write is (a View's result, the
// shared tensor, the loaded tile, the copy), so a tile dequantized into shared memory or into a fragment for
// a Dot alone is not observed. An f32 StoreGlobal of a deferrable variable (Deferrable) does not observe it:
// it makes the NaN canonical itself. Every other reader that does not ignore the bits observes all it uses.
class ObservedVars : public ir::IRVisitor {
 public:
  explicit ObservedVars(const std::unordered_set<const ir::VarNode*>& deferrable) : deferrable_(deferrable) {}

  void visit_inst_stmt(const ir::InstStmt& s) override {
    const ir::InstNode& inst = *s.inst;
    const auto [from, to] = passes_bits(s);
    const auto* store = inst.as<ir::StoreGlobalInst>();
    if (from && to) {
      passes_to_[to].push_back(from);
      for (const ir::Var& v : inst.used_vars())
        if (v.get() != from && v.get() != to) direct_.insert(v.get());
    } else if (store && deferrable_.count(store->src.tensor.get())) {
      // An f32 StoreGlobal makes the NaN canonical itself where it has to (Mark), once per store: not in
      // every iteration of the loop that accumulates what it stores.
      for (const ir::Var& v : inst.used_vars())
        if (v.get() != store->src.tensor.get()) direct_.insert(v.get());
    } else if (!ignores_nan_bits(s)) {
      // An instruction writing a variable in place (`out=var`) lists it too and counts as a reader:
      // conservative, and the native operations that matter here read it as well.
      for (const ir::Var& v : inst.used_vars()) direct_.insert(v.get());
    }
    IRVisitor::visit_inst_stmt(s);
  }

  // The observed variables: those read directly, and the sources of what passes their bits on to one.
  std::unordered_set<const ir::VarNode*> observed() const {
    std::unordered_set<const ir::VarNode*> seen(direct_.begin(), direct_.end());
    std::vector<const ir::VarNode*> work(direct_.begin(), direct_.end());
    while (!work.empty()) {
      const ir::VarNode* x = work.back();
      work.pop_back();
      auto it = passes_to_.find(x);
      if (it == passes_to_.end()) continue;
      for (const ir::VarNode* v : it->second)
        if (seen.insert(v).second) work.push_back(v);
    }
    return seen;
  }

 private:
  const std::unordered_set<const ir::VarNode*>& deferrable_;
  std::unordered_set<const ir::VarNode*> direct_;
  std::unordered_map<const ir::VarNode*, std::vector<const ir::VarNode*>> passes_to_;
};

// Marks the native arithmetic and widening casts whose result no reader observes, and the f32 StoreGlobals
// of deferrable variables no reader observes (they may hold the hardware's NaN: the store makes it
// canonical).
class Mark : public ir::IRMutator {
 public:
  Mark(const std::unordered_set<const ir::VarNode*>& observed,
       const std::unordered_set<const ir::VarNode*>& deferrable)
      : observed_(observed), deferrable_(deferrable) {}

  ir::Stmt mutate_inst_stmt(const ir::Stmt& s, const ir::InstStmt& node) override {
    bool unobserved = false;
    if (may_produce_hardware_nan(node)) {
      const ir::Var& out = node.inst->as<ir::ElementwiseInst>() ? node.inst->as<ir::ElementwiseInst>()->out
                                                                : node.inst->as<ir::CastInst>()->out;
      unobserved = !observed_.count(result_of(node, out).get());
    }
    if (const auto* st = node.inst->as<ir::StoreGlobalInst>()) {
      // An unobserved deferrable source may hold the hardware's NaN (its writers, or those whose bits it
      // takes, were marked above): the store makes it canonical.
      const ir::VarNode* src = st->src.tensor.get();
      const bool canonicalizes = deferrable_.count(src) > 0 && !observed_.count(src);
      if (st->canonicalizes_nan == canonicalizes) return s;
      auto marked = std::make_shared<ir::StoreGlobalInst>(*st);
      marked->canonicalizes_nan = canonicalizes;
      return std::make_shared<ir::InstStmt>(node.results, marked, node.loc);
    }
    if (const auto* e = node.inst->as<ir::ElementwiseInst>(); e && e->nan_payload_unobserved != unobserved) {
      auto marked = std::make_shared<ir::ElementwiseInst>(*e);
      marked->nan_payload_unobserved = unobserved;
      return std::make_shared<ir::InstStmt>(node.results, marked, node.loc);
    }
    if (const auto* c = node.inst->as<ir::CastInst>(); c && c->nan_payload_unobserved != unobserved) {
      auto marked = std::make_shared<ir::CastInst>(*c);
      marked->nan_payload_unobserved = unobserved;
      return std::make_shared<ir::InstStmt>(node.results, marked, node.loc);
    }
    return s;
  }

 private:
  const std::unordered_set<const ir::VarNode*>& observed_;
  const std::unordered_set<const ir::VarNode*>& deferrable_;
};

}  // namespace

bool is_native_float_arith(const ir::ElementwiseInst& n, DataType result) {
  using Op = ir::ElementwiseOp;
  if (result == DataType::f32()) {
    // Each correctly rounded in IEEE f32 (add, sub, mul, div and sqrt .rn, fma), which equals the exact
    // result in double rounded once. A scalar operand of type f32 is one value for every slot.
    const size_t arity = n.op == Op::Fma                                                            ? 3
                         : n.op == Op::Sqrt                                                         ? 1
                         : n.op == Op::Add || n.op == Op::Sub || n.op == Op::Mul || n.op == Op::Div ? 2
                                                                                                    : 0;
    if (arity == 0 || n.args.size() != arity) return false;
    return std::all_of(n.args.begin(), n.args.end(), [&](const ir::Operand& a) {
      return a.is_tensor() ? a.tensor->type().dtype == result : a.scalar->type == result;
    });
  }
  if (!is_float_16_or_32(result) || n.args.size() != 2) return false;
  if (n.op != Op::Add && n.op != Op::Sub && n.op != Op::Mul) return false;
  return std::all_of(n.args.begin(), n.args.end(),
                     [&](const ir::Operand& a) { return a.is_tensor() && a.tensor->type().dtype == result; });
}

ir::Program analyze_nan_payload(ir::Program program) {
  Deferrable writers;
  writers.visit_program(program);
  const std::unordered_set<const ir::VarNode*> deferrable = writers.vars();
  ObservedVars readers(deferrable);
  readers.visit_program(program);
  const std::unordered_set<const ir::VarNode*> observed = readers.observed();
  return Mark(observed, deferrable).mutate_program(program);
}

}  // namespace tilevm::transform
