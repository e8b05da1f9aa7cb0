// infer_threads (infer_threads.h): the thread count of the first register layout in program order, which
// in a verified program is every register layout's.
#include "tilevm/transform/infer_threads.h"

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/support/error.h"

namespace tilevm::transform {

namespace {

// The instructions that name a register layout: the ones whose layouts the verifier counts threads of.
class FirstRegisterLayout : public ir::IRVisitor {
 public:
  int64_t threads = 0;

  void visit_inst_stmt(const ir::InstStmt& s) override {
    if (threads > 0) return;
    const ir::InstNode& n = *s.inst;
    if (const auto* a = n.as<ir::AllocateRegisterInst>()) take(a->layout);
    if (const auto* a = n.as<ir::IotaInst>()) take(a->layout);
    if (const auto* c = n.as<ir::CastInst>(); c && c->layout) take(*c->layout);
    if (const auto* v = n.as<ir::ViewInst>(); v && v->layout) take(*v->layout);
    if (n.kind == ir::InstKind::LoadGlobal || n.kind == ir::InstKind::LoadShared)
      take(static_cast<const ir::LoadInst&>(n).layout);
  }

 private:
  void take(const layout::Layout& lay) {
    if (threads == 0) threads = lay.num_threads();
  }
};

}  // namespace

ir::Program infer_threads(ir::Program program) {
  if (program.threads > 0) return program;
  FirstRegisterLayout first;
  first.visit_program(program);
  TILEVM_ASSERT(first.threads > 0, "'{}' has no register layout and no [threads=T]; the verifier rejects it",
                program.name);
  program.threads = static_cast<int>(first.threads);
  return program;
}

}  // namespace tilevm::transform
