// Walking a program: IRVisitor calls a hook for every statement, instruction and expression, in program
// order. Override the hooks you need; call the base to keep descending.
#pragma once

#include "tilevm/ir/program.h"

namespace tilevm::ir {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;

  virtual void visit_program(const Program& p);
  virtual void visit_block(const Block& block);
  virtual void visit_stmt(const Stmt& s);  // dispatches to the hooks below

  virtual void visit_assign(const AssignStmt& s);
  virtual void visit_inst_stmt(const InstStmt& s);  // calls visit_inst(s.inst)
  virtual void visit_if(const IfStmt& s);
  virtual void visit_for(const ForStmt& s);
  virtual void visit_while(const WhileStmt& s);
  virtual void visit_break(const BreakStmt&) {}
  virtual void visit_continue(const ContinueStmt&) {}
  virtual void visit_return(const ReturnStmt&) {}
  virtual void visit_region(const RegionStmt& s);  // visits the body
  // By default visits the extents and every scalar expression of the body (indices and scalars).
  virtual void visit_parallel(const ParallelStmt& s);

  // An instruction: by default visits its expressions.
  virtual void visit_inst(const Inst& inst);
  // An expression: by default visits its sub-expressions (children first is not implied: pre-order).
  virtual void visit_expr(const Expr& e);
};

}  // namespace tilevm::ir
