// tilevm check FILE.tile [--arch ARCH] [-D NAME=VALUE]...: parses and verifies a program (docs/language.md
// section 6), and lowers it as run and emit do (transform/lower.h), so that a program check accepts is one
// they accept. --arch picks the lowering's target, as for emit: the tile layer lowers differently for sm_90a
// (TMA copies, wgmma, warp specialization), and its checks differ with it.
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

#include <fmt/format.h>

#include "commands.h"
#include "tilevm/ir/parser.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/support/error.h"
#include "tilevm/target/target.h"

namespace tilevm::cli {

void add_check_command(CLI::App& app) {
  auto* command = app.add_subcommand("check", "parse and verify a program; report every error");
  struct Request {
    std::string file, arch;
    std::vector<std::string> defines;
  };
  auto req = std::make_shared<Request>();
  command->add_option("FILE", req->file, "the program (.tile)")->required();
  command->add_option("--arch", req->arch, "the target to lower for (sm_80, sm_90a, ...; default sm_80)");
  command->add_option("-D", req->defines, "override a top-level constant: NAME=VALUE");
  command->callback([req] {
    transform::LowerOptions lower;
    if (!req->arch.empty()) {
      try {
        lower.target = target::Target::for_arch(req->arch);
      } catch (const Error& e) {
        throw UsageError(fmt::format("--arch {}: {}", req->arch, e.what()));
      }
    }
    // Every diagnostic on stderr; exit 1 on an error.
    load_program(req->file, parse_defines(req->defines), lower);
  });
}

}  // namespace tilevm::cli
