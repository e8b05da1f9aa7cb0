// Rewriting a program: IRMutator rebuilds a statement from its mutated parts only when one of them changed,
// and otherwise returns the very node it was given, so an untouched subtree stays shared between the old
// and the new program (pointer-equal; tests/unit/ir_mutator_test.cpp). Override mutate_expr, mutate_inst or
// a statement hook; call the base to descend.
//
//   struct Rename : IRMutator {                  // every use of variable `from` becomes `to`
//     Var from, to;
//     Var mutate_var(const Var& v) override { return v == from ? to : v; }
//   };
//   Program q = rename.mutate_program(p);        // statements that do not use `from` are p's own nodes
//
// A statement hook returns its `s` argument to keep the statement, a new node to replace it, or null to
// delete it.
#pragma once

#include "tilevm/ir/program.h"

namespace tilevm::ir {

// Whether two blocks hold the same statement nodes (pointer equality), as a mutator returns an unchanged one.
bool same_nodes(const Block& a, const Block& b);

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
  virtual Stmt mutate_region(const Stmt& s, const RegionStmt& node);
  virtual Stmt mutate_parallel(const Stmt& s, const ParallelStmt& node);

  // By default rebuilds the instruction with mutated expressions and variables (InstNode::rewrite), or
  // returns `inst` itself when none changed.
  virtual Inst mutate_inst(const Inst& inst);
  // By default rebuilds the expression from its mutated children (folding constants again).
  virtual Expr mutate_expr(const Expr& e);
  // Variables are kept by default; a pass that renames or retypes overrides this.
  virtual Var mutate_var(const Var& v) { return v; }
};

}  // namespace tilevm::ir
