// tile_program.h.
#include "tilevm/tile/tile_program.h"

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/inst_types.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/support/error.h"

namespace tilevm::tile {

bool uses_tile_operators(const ir::Program& program) {
  struct Find : ir::IRVisitor {
    bool found = false;
    void visit_inst(const ir::Inst& inst) override { found |= ir::is_tile_operator(inst->kind); }
    void visit_parallel(const ir::ParallelStmt&) override { found = true; }
  } find;
  find.visit_program(program);
  return find.found;
}

layout::Index tile_shape(const ir::TensorArg& arg) {
  std::optional<layout::Index> s = arg.static_view_shape();
  TILEVM_ASSERT(s, "tile operand '{}' has a non-constant shape after verification", arg.tensor->name);
  return *s;
}

ir::Var register_var(const std::string& name, DataType dtype, const layout::Layout& lay) {
  ir::TensorType t;
  t.dtype = dtype;
  t.scope = ir::Scope::Register;
  for (int64_t e : lay.shape()) t.shape.push_back(ir::make_int(e));
  t.layout = lay;
  return ir::make_var(name, ir::ValueType::tensor_of(std::move(t)));
}

ir::TensorArg whole(const ir::Var& v, SourceLoc loc) {
  return ir::TensorArg{v, {}, loc};
}

bool reads_any(const ir::Expr& e, const std::set<const ir::VarNode*>& vars) {
  if (!e) return false;
  if (const auto* r = e->as<ir::VarRef>()) return vars.count(r->var.get()) > 0;
  if (const auto* b = e->as<ir::BinaryExpr>()) return reads_any(b->a, vars) || reads_any(b->b, vars);
  if (const auto* u = e->as<ir::UnaryExpr>()) return reads_any(u->a, vars);
  return false;
}

ir::Expr substitute(const ir::Expr& e, const std::map<const ir::VarNode*, ir::Expr>& values) {
  struct Substitute : ir::IRMutator {
    const std::map<const ir::VarNode*, ir::Expr>* values;
    ir::Expr mutate_expr(const ir::Expr& x) override {
      if (const auto* r = x->as<ir::VarRef>()) {
        auto it = values->find(r->var.get());
        if (it != values->end()) return it->second;
      }
      return ir::IRMutator::mutate_expr(x);
    }
  } s;
  s.values = &values;
  return s.mutate_expr(e);
}

ir::Stmt inst_stmt(ir::Inst inst, std::vector<ir::Var> results) {
  const SourceLoc loc = inst->loc;
  return std::make_shared<ir::InstStmt>(std::move(results), std::move(inst), loc);
}

Names::Names(const ir::Program& program) {
  struct Collect : ir::IRVisitor {
    std::set<std::string>* names;
    void visit_inst_stmt(const ir::InstStmt& s) override {
      for (const ir::Var& r : s.results) names->insert(r->name);
      ir::IRVisitor::visit_inst_stmt(s);
    }
    void visit_assign(const ir::AssignStmt& s) override {
      names->insert(s.var->name);
      ir::IRVisitor::visit_assign(s);
    }
    void visit_for(const ir::ForStmt& s) override {
      names->insert(s.var->name);
      ir::IRVisitor::visit_for(s);
    }
    void visit_parallel(const ir::ParallelStmt& s) override {
      for (const ir::Var& v : s.vars) names->insert(v->name);
      ir::IRVisitor::visit_parallel(s);
    }
  } collect;
  collect.names = &used_;
  collect.visit_program(program);
  for (const ir::Var& p : program.params) used_.insert(p->name);
}

std::string Names::fresh(const std::string& base) {
  std::string name = base;
  for (int n = 0; used_.count(name); ++n) name = base + std::to_string(n);
  used_.insert(name);
  return name;
}

std::optional<ir::Var> result_var(const ir::Inst& inst, const std::string& name, const ir::Program& program,
                                  Diagnostics& diags) {
  std::optional<std::vector<ir::ValueType>> types =
      ir::infer_result_types(*inst, static_cast<int>(program.grid.size()), diags);
  if (!types || types->size() != 1) return std::nullopt;
  return ir::make_var(name, (*types)[0], inst->loc);
}

ir::Stmt ThreadsMutator::mutate_region(const ir::Stmt& s, const ir::RegionStmt& node) {
  const int64_t block_threads = threads_;
  threads_ = node.threads();
  ir::Stmt out = ir::IRMutator::mutate_region(s, node);
  threads_ = block_threads;
  return out;
}

}  // namespace tilevm::tile
