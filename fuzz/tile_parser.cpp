// Fuzz target: the .tile parser, the verifier and the lowering passes (`tilevm check`, `tilevm print`).
//
// Fails when any of them throws or crashes, when a diagnostic has no location in the input, when a
// verified program's canonical text does not parse back to the same text (docs/language.md section 6:
// print(parse(print(p))) == print(p)), and (under libFuzzer's -timeout) when an input takes too long.
#include <optional>
#include <string>

#include "tile_input.h"
#include "tile_mutator.h"
#include "tilevm/ir/printer.h"
#include "tilevm/tile/tile_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tilevm;
  const std::string_view source = fuzz::as_text(data, size);
  std::optional<ir::Program> parsed;
  if (!fuzz::compile_checked(source, &parsed)) return 0;
  // The Hopper lowering of the same tile program (TMA pipelines, wgmma, warp specialization) keeps the same
  // properties (a program without tile operators lowers alike for every target).
  if (tile::uses_tile_operators(*parsed)) fuzz::compile_checked(source, nullptr, target::Target::h100_sxm());
  try {
    const std::string printed = ir::print_program(*parsed);
    Diagnostics diags;
    const std::optional<ir::Program> again = ir::parse_program(printed, diags);
    if (!again || diags.has_errors())
      fuzz::failure("the printed program does not parse", printed + "\n" + diags.render("printed", printed));
    const std::string reprinted = ir::print_program(*again);
    if (reprinted != printed)
      fuzz::failure("print(parse(print(p))) != print(p)", printed + "\n---- printed again:\n" + reprinted);
  } catch (const std::exception& e) {
    fuzz::failure("printing or parsing the printed program threw", e.what());
  }
  return 0;
}
