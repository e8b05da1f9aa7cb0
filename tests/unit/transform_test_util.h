// Shared by the transform_*_test files: parsing a test program and finding its statements.
#pragma once

#include <stdexcept>
#include <string>

#include "tilevm/ir/mutator.h"  // same_nodes
#include "tilevm/ir/parser.h"
#include "tilevm/ir/program.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/transform/lower.h"

namespace tilevm::transform::testing {

inline ir::Program parse(const std::string& source) {
  Diagnostics diags;
  std::optional<ir::Program> p = ir::parse_program(source, diags);
  if (!p || diags.has_errors()) throw std::runtime_error(diags.render("test.tile", source));
  return *p;
}

// Tests verify after every pass, whatever the build type.
inline LowerOptions test_options() {
  return LowerOptions{.verify_each_pass = true};
}

}  // namespace tilevm::transform::testing
