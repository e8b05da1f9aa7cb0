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

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) fail("cannot read '{}': {}", path, std::strerror(errno));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) fail("cannot read '{}': {}", path, std::strerror(errno));
  return text.str();
}

// `-D NAME=VALUE` strings into parse options; a malformed one is bad command-line use.
ir::ParseOptions parse_defines(const std::vector<std::string>& defines) {
  ir::ParseOptions options;
  for (const std::string& d : defines) {
    size_t eq = d.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == d.size()) {
      throw UsageError("-D expects NAME=VALUE, got '" + d + "'");
    }
    options.defines[d.substr(0, eq)] = d.substr(eq + 1);
  }
  return options;
}

void run_print(const PrintOptions& options) {
  ir::ParseOptions parse_options = parse_defines(options.defines);
  std::string source = read_file(options.path);
  Diagnostics diags;
  std::optional<ir::Program> program = ir::parse_program(source, diags, parse_options);
  if (!program) {
    std::cout.flush();
    std::cerr << diags.render(options.path, source);
    // The diagnostics are the whole report: exit 1 without main's extra `error:` line.
    throw ExitStatus{1};
  }
  std::cout << ir::print_program(*program);
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
