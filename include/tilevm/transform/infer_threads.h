// Thread-count inference: a program whose header leaves `[threads=T]` out gets T from its register layouts.
//
//   def scale<1>(f32* x_ptr):                          def scale<1>[threads=32](f32* x_ptr):
//       x = LoadGlobal(g, local(2).spatial(32))  -->       x = LoadGlobal(g, local(2).spatial(32))
//
// The verifier checks that every register layout has the program's count (the first layout's where the
// header gives none); this pass only writes that count into Program::threads. A header that gives it is kept.
#pragma once

#include "tilevm/ir/program.h"

namespace tilevm::transform {

// @pre `program` verifies.
ir::Program infer_threads(ir::Program program);

}  // namespace tilevm::transform
