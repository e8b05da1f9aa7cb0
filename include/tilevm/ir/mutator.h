// Rewriting a program: IRMutator rebuilds every statement from its mutated parts and shares the nodes
// that did not change. Override mutate_expr, mutate_inst or a statement hook; call the base to descend.
#pragma once

#include "tilevm/ir/program.h"

namespace tilevm::ir {

class IRMutator {
 public:
  virtual ~IRMutator() = default;

  virtual Program mutate_program(const Program& p);
  virtual Block mutate_block(const Block& block);
  // Returns the new statement, or null to delete it.
  virtual Stmt mutate_stmt(const Stmt& s);

  virtual Stmt mutate_assign(const Stmt& s, const AssignStmt& node);
  virtual Stmt mutate_inst_stmt(const Stmt& s, const InstStmt& node);
  virtual Stmt mutate_if(const Stmt& s, const IfStmt& node);
  virtual Stmt mutate_for(const Stmt& s, const ForStmt& node);
  virtual Stmt mutate_while(const Stmt& s, const WhileStmt& node);

  // By default rebuilds the instruction with mutated expressions and variables (InstNode::rewrite).
  virtual Inst mutate_inst(const Inst& inst);
  // By default rebuilds the expression from its mutated children (folding constants again).
  virtual Expr mutate_expr(const Expr& e);
  // Variables are kept by default; a pass that renames or retypes overrides this.
  virtual Var mutate_var(const Var& v) { return v; }
};

}  // namespace tilevm::ir
