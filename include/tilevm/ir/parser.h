// The .tile text format (docs/language.md section 4): Python-like syntax, indentation delimits blocks.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "tilevm/ir/program.h"

namespace tilevm::ir {

struct ParseOptions {
  // -D NAME=VALUE: overrides of top-level constants (the value is parsed as an expression: `64`, `1.5`).
  std::map<std::string, std::string> defines;
  // A define that names no top-level constant is an error of the parse; false leaves it to the caller (the
  // command line reports it as a usage error, like an unknown --arg).
  bool unknown_define_is_error = true;
};

// Parses one program. Every error found is added to `diags` with its location (the parser recovers at the
// next statement); returns nullopt when there was any error.
std::optional<Program> parse_program(std::string_view source, Diagnostics& diags,
                                     const ParseOptions& options = {});

}  // namespace tilevm::ir
