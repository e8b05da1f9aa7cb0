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

}  // namespace tilevm::tile
