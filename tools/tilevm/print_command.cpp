// `tilevm print FILE.tile [-D NAME=VALUE]... [--after PASS|all]` (docs/language.md section 6): the program's
// canonical text form.
//
// With --after PASS the program is lowered (transform/lower.h, verifying after every pass) and printed as
// that pass left it; with --after all it is printed after every pass, each preceded by a `# after PASS`
// line (`# after PASS: unchanged` alone when the pass changed nothing). What the passes record prints as
// trailing comments (docs/language.md, "Lowered programs"). An unknown pass is bad command-line use (exit
// status 2) and the message lists the passes.
//
// On parse or verify errors the diagnostics go to stderr (`FILE:LINE:COL: error: message`, the source line
// and a caret, with FILE as given on the command line) and the exit status is 1. An unreadable file is a
// tilevm::Error naming the path.
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/printer.h"
#include "tilevm/support/error.h"
#include "tilevm/target/target.h"
#include "tilevm/transform/lower.h"

namespace tilevm::cli {
namespace {

struct PrintOptions {
  std::string path;
  std::vector<std::string> defines;
  std::string after;  // a pass name, "all", or empty: print the parsed program
  std::string arch;   // the target of --after's lowering (default sm_80)
};

void run_print(const PrintOptions& options) {
  const ir::ParseOptions parse_options = parse_defines(options.defines);
  if (options.after.empty()) {
    std::cout << ir::print_program(load_program(options.path, parse_options, std::nullopt));
    return;
  }
  const std::vector<std::string>& passes = transform::lowering_passes();
  const bool all = options.after == "all";
  if (!all && std::find(passes.begin(), passes.end(), options.after) == passes.end())
    throw UsageError(fmt::format("--after '{}' is not a pass; the passes are {} (or all)", options.after,
                                 fmt::join(passes, ", ")));
  transform::LowerOptions lower{.verify_each_pass = true};
  if (!options.arch.empty()) lower.target = target::Target::for_arch(options.arch);
  std::string previous;  // with --after all, a pass that changed nothing prints one line instead
  lower.after_pass = [&](const std::string& pass, const ir::Program& program) {
    std::string text = ir::print_program(program);
    if (all) {
      std::cout << "# after " << pass << (text == previous ? ": unchanged\n" : "\n");
      if (text != previous) std::cout << text;
      previous = std::move(text);
      return;
    }
    if (pass == options.after) std::cout << text;
  };
  load_program(options.path, parse_options, lower);
}

}  // namespace

void add_print_command(CLI::App& app) {
  auto options = std::make_shared<PrintOptions>();
  CLI::App* command = app.add_subcommand("print", "parse a .tile program and print its canonical text form");
  command->add_option("file", options->path, "the .tile program")->required();
  command->add_option("-D", options->defines, "override a top-level constant: -D NAME=VALUE")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  command->add_option("--after", options->after, "lower the program and print it after this pass (or all)")
      ->type_name("PASS|all");
  command->add_option(
      "--arch", options->arch,
      "with --after: the target the tile layer lowers for (sm_80, sm_90a, ...; default sm_80)");
  command->callback([options] { run_print(*options); });
}

}  // namespace tilevm::cli
