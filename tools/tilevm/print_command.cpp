// `tilevm print FILE.tile [-D NAME=VALUE]...` (LANGUAGE.md section 6): the program's canonical text form.
//
// On parse errors the diagnostics go to stderr (`FILE:LINE:COL: error: message`, the source line and a
// caret, with FILE as given on the command line) and the exit status is 1. An unreadable file is a
// tilevm::Error naming the path.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/printer.h"
#include "tilevm/support/error.h"

namespace tilevm::cli {
namespace {

struct PrintOptions {
  std::string path;
  std::vector<std::string> defines;
};

void run_print(const PrintOptions& options) {
  const ir::ParseOptions parse_options = parse_defines(options.defines);
  std::cout << ir::print_program(load_program(options.path, parse_options, /*verify=*/false));
}

}  // namespace

void add_print_command(CLI::App& app) {
  auto options = std::make_shared<PrintOptions>();
  CLI::App* command = app.add_subcommand("print", "parse a .tile program and print its canonical text form");
  command->add_option("file", options->path, "the .tile program")->required();
  command->add_option("-D", options->defines, "override a top-level constant: -D NAME=VALUE")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  command->callback([options] { run_print(*options); });
}

}  // namespace tilevm::cli
