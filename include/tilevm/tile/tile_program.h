// What the tile layer's passes ask of a whole program.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "tilevm/ir/mutator.h"
#include "tilevm/ir/program.h"
#include "tilevm/support/diagnostics.h"

namespace tilevm::tile {

// Whether any statement of the program, at any depth, is a tile operator (ir::is_tile_operator) or a
// Parallel loop: the passes that act only on tile programs return every other program unchanged.
bool uses_tile_operators(const ir::Program& program);

// The shape of a register or shared tile operand's view (TensorArg::static_view_shape), which the verifier
// has checked to be constant. @pre the program verified
layout::Index tile_shape(const ir::TensorArg& arg);

// A new register tensor of `lay`'s shape (the lowering passes' temporaries), and a whole-tensor operand.
ir::Var register_var(const std::string& name, DataType dtype, const layout::Layout& lay);
ir::TensorArg whole(const ir::Var& v, SourceLoc loc);

// Whether the scalar expression `e` reads one of `vars`.
bool reads_any(const ir::Expr& e, const std::set<const ir::VarNode*>& vars);

// `e` with each variable of `values` replaced by its expression (a loop variable by its value at an
// iteration, one loop's variables by another's).
ir::Expr substitute(const ir::Expr& e, const std::map<const ir::VarNode*, ir::Expr>& values);

// An instruction as a statement, defining `results`.
ir::Stmt inst_stmt(ir::Inst inst, std::vector<ir::Var> results = {});

// Every name a program defines (parameters, results, scalars, loop and Parallel variables), so that the
// tensors a pass adds take names of their own: fresh("s_row") is s_row, or s_row0, s_row1, ... .
class Names {
 public:
  explicit Names(const ir::Program& program);
  std::string fresh(const std::string& base);

 private:
  std::set<std::string> used_;
};

// A variable named `name` for the one result of `inst` (the type the verifier infers for it), or nullopt
// with the diagnostic.
std::optional<ir::Var> result_var(const ir::Inst& inst, const std::string& name, const ir::Program& program,
                                  Diagnostics& diags);

// A lowering pass that lays tiles out over the block's threads_, and over a region's own inside it (a
// warp-specialized region is the block for its body: docs/language.md, "Warp-specialized regions").
class ThreadsMutator : public ir::IRMutator {
 public:
  explicit ThreadsMutator(int64_t threads) : threads_(threads) {}
  ir::Stmt mutate_region(const ir::Stmt& s, const ir::RegionStmt& node) override;

 protected:
  int64_t threads_;
};

}  // namespace tilevm::tile
