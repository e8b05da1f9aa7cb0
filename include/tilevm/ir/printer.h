// The canonical text form of programs (docs/language.md section 4): print(parse(print(p))) == print(p). What
// the lowering passes record (transform/lower.h) prints as trailing comments, which parse back as nothing.
#pragma once

#include <string>

#include "tilevm/ir/program.h"

namespace tilevm::ir {

// An expression with the fewest parentheses that keep its meaning (Python precedence).
std::string print_expr(const Expr& e);
// A whole program: its named layouts, then the `def` header and the indented body.
std::string print_program(const Program& p);

}  // namespace tilevm::ir
