// The verifier: checks a program against LANGUAGE.md before anything runs or compiles it. Types, shapes,
// offset ranks, one thread count for the block, layout shapes equal to tile shapes, View validity, Dot
// operand shapes and layouts, scopes, block-uniform control flow (docs/language.md lists every rule).
#pragma once

#include "tilevm/ir/program.h"

namespace tilevm::ir {

// Adds every error it finds to `diags` (not only the first). When the program leaves `threads` out
// (threads == 0), sets it from the register layouts. Returns true when there was no error.
bool verify_program(Program& program, Diagnostics& diags);

}  // namespace tilevm::ir
