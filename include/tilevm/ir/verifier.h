// The verifier: checks a program against docs/language.md before anything runs or compiles it. Types, shapes,
// offset ranks, one thread count for the block, layout shapes equal to tile shapes, View validity, Dot
// operand shapes and layouts, scopes, block-uniform control flow (docs/language.md lists every rule).
#pragma once

#include "tilevm/ir/program.h"

namespace tilevm::ir {

// Adds every error it finds to `diags` (not only the first) and returns true when there was none. Only
// checks: a program that leaves `threads` out (threads == 0) is checked against the count of its first
// register layout, which transform::infer_threads then writes into it.
bool verify_program(const Program& program, Diagnostics& diags);

}  // namespace tilevm::ir
