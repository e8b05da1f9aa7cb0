#include "tilevm/ir/visitor.h"

#include <map>

#include "tilevm/ir/inst/memory_global.h"

namespace tilevm::ir {

void IRVisitor::visit_program(const Program& p) {
  for (const Expr& e : p.grid) visit_expr(e);
  visit_block(p.body);
}

void IRVisitor::visit_block(const Block& block) {
  for (const Stmt& s : block) visit_stmt(s);
}

void IRVisitor::visit_stmt(const Stmt& s) {
  switch (s->kind) {
    case StmtKind::Assign:
      return visit_assign(*s->as<AssignStmt>());
    case StmtKind::Inst:
      return visit_inst_stmt(*s->as<InstStmt>());
    case StmtKind::If:
      return visit_if(*s->as<IfStmt>());
    case StmtKind::For:
      return visit_for(*s->as<ForStmt>());
    case StmtKind::While:
      return visit_while(*s->as<WhileStmt>());
    case StmtKind::Break:
      return visit_break(*s->as<BreakStmt>());
    case StmtKind::Continue:
      return visit_continue(*s->as<ContinueStmt>());
    case StmtKind::Return:
      return visit_return(*s->as<ReturnStmt>());
    case StmtKind::Region:
      return visit_region(*s->as<RegionStmt>());
    case StmtKind::Parallel:
      return visit_parallel(*s->as<ParallelStmt>());
  }
}

void IRVisitor::visit_assign(const AssignStmt& s) {
  visit_expr(s.value);
}

void IRVisitor::visit_inst_stmt(const InstStmt& s) {
  visit_inst(s.inst);
}

void IRVisitor::visit_if(const IfStmt& s) {
  for (size_t k = 0; k < s.conditions.size(); ++k) {
    visit_expr(s.conditions[k]);
    visit_block(s.bodies[k]);
  }
  visit_block(s.else_body);
}

void IRVisitor::visit_for(const ForStmt& s) {
  visit_expr(s.start);
  visit_expr(s.stop);
  visit_expr(s.step);
  visit_block(s.body);
}

void IRVisitor::visit_parallel(const ParallelStmt& s) {
  for (const Expr& e : s.extents) visit_expr(e);
  auto fn = [&](const Expr& e) { visit_expr(e); };
  for (const ElementAssign& a : s.body) {
    for_each_expr(a.target, fn);
    for_each_expr(a.value, fn);
  }
}

void IRVisitor::visit_while(const WhileStmt& s) {
  visit_expr(s.condition);
  visit_block(s.body);
}

void IRVisitor::visit_region(const RegionStmt& s) {
  visit_block(s.body);
}

void IRVisitor::visit_inst(const Inst& inst) {
  inst->for_each_expr([this](const Expr& e) { visit_expr(e); });
}

void IRVisitor::visit_expr(const Expr& e) {
  if (const auto* b = e->as<BinaryExpr>()) {
    visit_expr(b->a);
    visit_expr(b->b);
  } else if (const auto* u = e->as<UnaryExpr>()) {
    visit_expr(u->a);
  }
}

}  // namespace tilevm::ir

namespace tilevm::ir {

std::vector<std::pair<std::string, const ViewGlobalInst*>> pointer_views(const Program& program) {
  struct Views : IRVisitor {
    std::map<const VarNode*, const ViewGlobalInst*> first;
    void visit_inst(const Inst& inst) override {
      const auto* v = inst->as<ViewGlobalInst>();
      const auto* ref = v && v->layout && v->ptr ? v->ptr->as<VarRef>() : nullptr;
      if (ref) first.emplace(ref->var.get(), v);
      IRVisitor::visit_inst(inst);
    }
  } views;
  views.visit_program(program);
  std::vector<std::pair<std::string, const ViewGlobalInst*>> out;
  for (const Var& p : program.params) {
    auto it = views.first.find(p.get());
    if (it != views.first.end()) out.emplace_back(p->name, it->second);
  }
  return out;
}

std::vector<std::pair<std::string, layout::Layout>> pointer_layouts(const Program& program) {
  std::vector<std::pair<std::string, layout::Layout>> out;
  for (const auto& [name, view] : pointer_views(program)) out.emplace_back(name, *view->layout);
  return out;
}

}  // namespace tilevm::ir
