// nan_payload_unobserved: a walk over every instruction that reads a variable (nan_payload.h says why).
#include "nan_payload.h"

#include <algorithm>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/visitor.h"

namespace tilevm::codegen::cuda {

namespace {

bool is_float_16_or_32(DataType t) { return t == DataType::f32() || t == DataType::f16() || t == DataType::bf16(); }

// The readers that map every NaN operand to the same result (nan_payload.h).
bool ignores_nan_bits(const ir::InstStmt& s) {
  const ir::InstNode& inst = *s.inst;
  if (const auto* e = inst.as<ir::ElementwiseInst>())
    return is_native_float_arith(*e, (e->out ? e->out : s.results.at(0))->type.dtype);
  if (const auto* c = inst.as<ir::CastInst>()) {
    const DataType from = c->src.type().dtype;
    return from == DataType::f32() && (c->dtype == DataType::f16() || c->dtype == DataType::bf16());  // tv_f32_to_*
  }
  return inst.as<ir::DotInst>() != nullptr;
}

class Readers : public ir::IRVisitor {
 public:
  explicit Readers(const ir::VarNode* var) : var_(var) {}
  bool all_ignore = true;

  void visit_inst_stmt(const ir::InstStmt& s) override {
    for (const ir::Var& v : s.inst->used_vars()) {
      if (v.get() != var_) continue;
      // An instruction writing `var` in place (`out=var`) lists it too and counts as a reader: conservative,
      // and for the native operations that matter here it reads it as well.
      if (!ignores_nan_bits(s)) all_ignore = false;
    }
    IRVisitor::visit_inst_stmt(s);
  }

 private:
  const ir::VarNode* var_;
};

}  // namespace

bool is_native_float_arith(const ir::ElementwiseInst& n, DataType result) {
  using Op = ir::ElementwiseOp;
  if (n.op == Op::Fma) {
    if (result != DataType::f32() || n.args.size() != 3) return false;
  } else {
    if (!is_float_16_or_32(result) || n.args.size() != 2) return false;
    if (n.op != Op::Add && n.op != Op::Sub && n.op != Op::Mul) return false;
  }
  return std::all_of(n.args.begin(), n.args.end(),
                     [&](const ir::Operand& a) { return a.is_tensor() && a.tensor->type().dtype == result; });
}

bool nan_payload_unobserved(const ir::Program& program, const ir::Var& var) {
  Readers readers(var.get());
  readers.visit_program(program);
  return readers.all_ignore;
}

}  // namespace tilevm::codegen::cuda
