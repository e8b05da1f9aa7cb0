// tile_program.h.
#include "tilevm/tile/tile_program.h"

#include "tilevm/ir/inst/all.h"
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

ir::Stmt ThreadsMutator::mutate_region(const ir::Stmt& s, const ir::RegionStmt& node) {
  const int64_t block_threads = threads_;
  threads_ = node.threads();
  ir::Stmt out = ir::IRMutator::mutate_region(s, node);
  threads_ = block_threads;
  return out;
}

}  // namespace tilevm::tile
