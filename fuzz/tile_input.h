// A .tile program as the fuzz targets take it: parsed, verified and lowered as `tilevm check` and `run` do,
// with the properties every stage must keep checked on the way (fuzz/README.md, "located").
#pragma once

#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_target.h"
#include "tilevm/ir/parser.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/support/error.h"
#include "tilevm/target/target.h"
#include "tilevm/transform/lower.h"

namespace tilevm::fuzz {

// Every diagnostic must point into the file: a line of it (or the line after the last, for "unexpected end
// of file") and a column >= 1. `stage` names the step that reported it.
inline void check_located(const Diagnostics& diags, std::string_view source, std::string_view stage) {
  const int lines = static_cast<int>(std::count(source.begin(), source.end(), '\n')) + 1;
  for (const Diagnostic& d : diags.all()) {
    if (!d.loc.known() || d.loc.line > lines + 1 || d.loc.col < 1) {
      failure(std::string(stage) + " reported a diagnostic without a location in the file",
              fmt::format("{}:{}: {}", d.loc.line, d.loc.col, d.message));
    }
  }
}

// Parses, verifies and lowers `source` for `target` (verifying after every pass; sm_80 by default, sm_90a
// for the tile layer's Hopper lowering: TMA, wgmma, warp specialization). Returns the lowered program, or
// nullopt when the program has errors, which must then all be located diagnostics. Also nullopt when
// `parsed` is given and the program does not parse; else *parsed is the program before lowering.
inline std::optional<ir::Program> compile_checked(
    std::string_view source, std::optional<ir::Program>* parsed = nullptr,
    const target::Target& target = target::Target::generic_sm80()) {
  Diagnostics diags;
  std::optional<ir::Program> program;
  try {
    program = ir::parse_program(source, diags);
  } catch (const std::exception& e) {
    failure("the parser threw instead of reporting a located diagnostic", e.what());
  }
  check_located(diags, source, "the parser");
  if (!program || diags.has_errors()) {
    if (!diags.has_errors()) failure("the parser failed without a diagnostic", source);
    return std::nullopt;
  }
  if (parsed) *parsed = program;
  std::optional<ir::Program> lowered;
  try {
    lowered = transform::lower(*program, diags, {.target = target, .verify_each_pass = true});
  } catch (const std::exception& e) {
    failure("verify or lower threw instead of reporting a located diagnostic", e.what());
  }
  check_located(diags, source, "the verifier");
  if (!lowered && !diags.has_errors()) failure("lower failed without a diagnostic", source);
  return lowered;
}

}  // namespace tilevm::fuzz
