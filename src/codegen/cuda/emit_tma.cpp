// Barriers and TMA copies (ir/inst/tma.h). They need sm_90; for older targets the emitter says so. The sm_90
// code generator for them is the next step of the Hopper work (docs/language.md section 5 records the
// state); until it lands the emitter refuses them with a located message, and the interpreter runs them.
#include "emitter.h"

namespace tilevm::codegen::cuda {

void Emitter::emit_barrier_tma(const ir::InstStmt& s) {
  if (!options_.target.features.hopper)
    unsupported(s, fmt::format("{} needs sm_90 or newer (the tensor-memory accelerator and transaction "
                               "barriers); the target is {}",
                               s.inst->name(), options_.target.arch));
  unsupported(s,
              "barriers and TMA copies run on the interpreter only so far; their sm_90 code generator is "
              "not written yet");
}

}  // namespace tilevm::codegen::cuda
