// The launch-time check of global views against the buffers behind them, for the GPU runner (run_on_gpu),
// which knows each pointer's buffer size.
//
// The emitted kernel keeps every access inside its view (elements outside a view read as 0 and writes to
// them are dropped, docs/language.md section 7), so a view that lies inside its buffer keeps the kernel's
// accesses inside it. A view that leaves its buffer (a shape or stride larger than the data, a negative
// stride) would read or write other device memory without a trace; the interpreter reports such accesses
// element by element, and this check reports the view before the launch.
//
// Only views that some instruction reads or writes, and whose shape and strides the host can evaluate
// (constants and scalar arguments), are checked; one that depends on a block index or a loop variable is
// checked by the interpreter only. The check is stricter than the interpreter in one case: a view used
// only where it lies inside the buffer, but declared larger than it, is refused here.
#pragma once

#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/program.h"

namespace tilevm::exec {

// Adds an error at each ViewGlobal of a pointer parameter whose elements reach outside the buffer that
// `args` gives for it; returns true when there was none.
bool check_views_in_buffers(const ir::Program& program, const interp::Arguments& args, Diagnostics& diags);

}  // namespace tilevm::exec
