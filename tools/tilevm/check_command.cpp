// tilevm check FILE.tile: parses and verifies a program (LANGUAGE.md section 6).
//
// Prints nothing and exits 0 when the program is valid. Otherwise every diagnostic of the parser, or when
// the program parses, of the verifier, goes to stderr as `FILE:LINE:COL: error: message` with the source
// line and a caret (FILE as given on the command line), and the exit status is 1. An unreadable file is a
// tilevm::Error naming the path.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "commands.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/verifier.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/support/error.h"

namespace tilevm::cli {

namespace {

std::string read_source(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read '{}'", path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail("cannot read '{}'", path);
  return text.str();
}

// Parses and verifies; renders the diagnostics on stderr. True when there was no error.
bool check_file(const std::string& path) {
  const std::string source = read_source(path);
  Diagnostics diags;
  std::optional<ir::Program> program = ir::parse_program(source, diags);
  if (program && !diags.has_errors()) ir::verify_program(*program, diags);
  std::cout.flush();
  std::cerr << diags.render(path, source);
  std::cerr.flush();
  return !diags.has_errors();
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto* command = app.add_subcommand("check", "parse and verify a program; report every error");
  auto file = std::make_shared<std::string>();
  command->add_option("FILE", *file, "the program (.tile)")->required();
  command->callback([file] {
    if (!check_file(*file)) throw ExitStatus{1};  // the diagnostics are the message
  });
}

}  // namespace tilevm::cli
