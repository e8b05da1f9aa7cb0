// tilevm check FILE.tile: parses and verifies a program (docs/language.md section 6), and lowers it as run
// and emit do (transform/lower.h), so that a program check accepts is one they accept.
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
#include "tilevm/support/diagnostics.h"
#include "tilevm/support/error.h"

namespace tilevm::cli {

void add_check_command(CLI::App& app) {
  auto* command = app.add_subcommand("check", "parse and verify a program; report every error");
  auto file = std::make_shared<std::string>();
  command->add_option("FILE", *file, "the program (.tile)")->required();
  command->callback([file] {
    load_program(*file, {}, transform::LowerOptions{});  // every diagnostic on stderr; exit 1 on an error
  });
}

}  // namespace tilevm::cli
