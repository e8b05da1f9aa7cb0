#include "tilevm/ir/mutator.h"

namespace tilevm::ir {

bool same_nodes(const Block& a, const Block& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k] != b[k]) return false;
  return true;
}

Program IRMutator::mutate_program(const Program& p) {
  Program out = p;
  for (Expr& e : out.grid) e = mutate_expr(e);
  for (Var& v : out.params) v = mutate_var(v);
  out.body = mutate_block(p.body);
  return out;
}

Block IRMutator::mutate_block(const Block& block) {
  Block out;
  out.reserve(block.size());
  for (const Stmt& s : block) {
    if (Stmt n = mutate_stmt(s)) out.push_back(std::move(n));
  }
  return out;
}

Stmt IRMutator::mutate_stmt(const Stmt& s) {
  switch (s->kind) {
    case StmtKind::Assign:
      return mutate_assign(s, *s->as<AssignStmt>());
    case StmtKind::Inst:
      return mutate_inst_stmt(s, *s->as<InstStmt>());
    case StmtKind::If:
      return mutate_if(s, *s->as<IfStmt>());
    case StmtKind::For:
      return mutate_for(s, *s->as<ForStmt>());
    case StmtKind::While:
      return mutate_while(s, *s->as<WhileStmt>());
    case StmtKind::Region:
      return mutate_region(s, *s->as<RegionStmt>());
    case StmtKind::Parallel:
      return mutate_parallel(s, *s->as<ParallelStmt>());
    case StmtKind::Break:
    case StmtKind::Continue:
    case StmtKind::Return:
      return s;
  }
  return s;
}

Stmt IRMutator::mutate_assign(const Stmt& s, const AssignStmt& node) {
  Var v = mutate_var(node.var);
  Expr e = mutate_expr(node.value);
  if (v == node.var && e == node.value) return s;
  return std::make_shared<AssignStmt>(v, e, node.defines, node.loc);
}

Stmt IRMutator::mutate_inst_stmt(const Stmt& s, const InstStmt& node) {
  std::vector<Var> results;
  bool changed = false;
  for (const Var& r : node.results) {
    results.push_back(mutate_var(r));
    changed |= results.back() != r;
  }
  Inst inst = mutate_inst(node.inst);
  if (!changed && inst == node.inst) return s;
  return std::make_shared<InstStmt>(std::move(results), std::move(inst), node.loc);
}

Stmt IRMutator::mutate_if(const Stmt& s, const IfStmt& node) {
  std::vector<Expr> conditions;
  std::vector<Block> bodies;
  bool changed = false;
  for (size_t k = 0; k < node.conditions.size(); ++k) {
    conditions.push_back(mutate_expr(node.conditions[k]));
    bodies.push_back(mutate_block(node.bodies[k]));
    changed |= conditions.back() != node.conditions[k] || !same_nodes(bodies.back(), node.bodies[k]);
  }
  Block else_body = mutate_block(node.else_body);
  if (!changed && same_nodes(else_body, node.else_body)) return s;
  return std::make_shared<IfStmt>(std::move(conditions), std::move(bodies), std::move(else_body),
                                  node.has_else, node.loc);
}

Stmt IRMutator::mutate_for(const Stmt& s, const ForStmt& node) {
  Var var = mutate_var(node.var);
  Expr start = mutate_expr(node.start), stop = mutate_expr(node.stop), step = mutate_expr(node.step);
  Block body = mutate_block(node.body);
  if (var == node.var && start == node.start && stop == node.stop && step == node.step &&
      same_nodes(body, node.body))
    return s;
  return std::make_shared<ForStmt>(std::move(var), std::move(start), std::move(stop), std::move(step),
                                   std::move(body), node.loc, node.attrs);
}

Stmt IRMutator::mutate_while(const Stmt& s, const WhileStmt& node) {
  Expr condition = mutate_expr(node.condition);
  Block body = mutate_block(node.body);
  if (condition == node.condition && same_nodes(body, node.body)) return s;
  return std::make_shared<WhileStmt>(std::move(condition), std::move(body), node.loc);
}

Stmt IRMutator::mutate_region(const Stmt& s, const RegionStmt& node) {
  Block body = mutate_block(node.body);
  if (same_nodes(body, node.body)) return s;
  return std::make_shared<RegionStmt>(node.first, node.stop, node.registers, std::move(body), node.loc);
}

Stmt IRMutator::mutate_parallel(const Stmt& s, const ParallelStmt& node) {
  bool changed = false;
  auto exprs = [&](const Expr& e) {
    Expr n = mutate_expr(e);
    changed |= n != e;
    return n;
  };
  auto vars = [&](const Var& v) {
    Var n = mutate_var(v);
    changed |= n != v;
    return n;
  };
  std::vector<Var> loop_vars;
  for (const Var& v : node.vars) loop_vars.push_back(vars(v));
  std::vector<Expr> extents;
  for (const Expr& e : node.extents) extents.push_back(exprs(e));
  std::vector<ElementAssign> body;
  for (const ElementAssign& a : node.body)
    body.push_back({rewrite(a.target, exprs, vars), rewrite(a.value, exprs, vars), a.loc});
  if (!changed) return s;
  return std::make_shared<ParallelStmt>(std::move(loop_vars), std::move(extents), std::move(body), node.loc);
}

Inst IRMutator::mutate_inst(const Inst& inst) {
  // InstNode::rewrite always builds a new node; it is kept only when an operand changed.
  bool changed = false;
  Inst out = inst->rewrite(
      [&](const Expr& e) {
        Expr n = mutate_expr(e);
        changed |= n != e;
        return n;
      },
      [&](const Var& v) {
        Var n = mutate_var(v);
        changed |= n != v;
        return n;
      });
  return changed ? out : inst;
}

Expr IRMutator::mutate_expr(const Expr& e) {
  if (const auto* b = e->as<BinaryExpr>()) {
    Expr x = mutate_expr(b->a), y = mutate_expr(b->b);
    if (x == b->a && y == b->b) return e;
    return make_binary(b->op, x, y, b->loc);
  }
  if (const auto* u = e->as<UnaryExpr>()) {
    Expr x = mutate_expr(u->a);
    if (x == u->a) return e;
    return make_unary(u->op, x, u->loc);
  }
  if (const auto* r = e->as<VarRef>()) {
    Var v = mutate_var(r->var);
    if (v == r->var) return e;
    return make_var_ref(v, r->loc);
  }
  return e;
}

}  // namespace tilevm::ir
