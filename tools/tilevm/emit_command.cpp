// `tilevm emit FILE.tile [--arch sm_90] [-D NAME=VALUE]... [-o OUT.cu] [--compile]` (docs/language.md
// section 6): the CUDA C++ that the GPU backend compiles for the program. With --compile the source is also
// compiled by NVRTC for the arch and the registers and spills per thread are reported on stderr.
//
// Exit status: 0 on success; 1 on parse or verify errors (diagnostics on stderr), on a program the backend
// cannot compile, or on an NVRTC failure; 2 on bad command-line use.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/parser.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"
#include "tilevm/support/file_io.h"
#include "tilevm/target/target.h"

namespace tilevm::cli {

void add_emit_command(CLI::App& app);

namespace {

struct EmitRequest {
  std::string path;
  std::string arch = "sm_90";
  std::string output;
  std::vector<std::string> defines;
  bool compile = false;
};

void run_emit(const EmitRequest& req) {
  const target::Target target = target::Target::for_arch(req.arch);
  const ir::Program program =
      load_program(req.path, parse_defines(req.defines), transform::LowerOptions{.target = target});
  codegen::cuda::EmittedKernel k;
  try {
    k = codegen::cuda::emit_cuda(program, {.target = target});
  } catch (const codegen::cuda::Unsupported& e) {
    // Printed as the other diagnostics are, with the file.
    std::cerr << req.path << ":" << e.loc.line << ":" << e.loc.col << ": error: " << e.reason << "\n";
    throw ExitStatus{1};
  }
  if (req.output.empty()) {
    std::cout << k.source;
  } else {
    write_file(req.output, k.source);
  }
  if (req.compile) {
    runtime::CompileOptions options{.arch = req.arch};
    options.extra_flags.push_back("-Xptxas=-v");
    const runtime::CompiledKernel c = runtime::compile_cuda(k.source, k.kernel_name + ".cu", options);
    std::cerr << c.log;
  }
}

}  // namespace

void add_emit_command(CLI::App& app) {
  auto req = std::make_shared<EmitRequest>();
  CLI::App* cmd = app.add_subcommand("emit", "print the CUDA C++ the GPU backend generates for a program");
  cmd->add_option("file", req->path, "the .tile program")->required();
  cmd->add_option("--arch", req->arch, "target architecture (sm_80, sm_90, ...)");
  cmd->add_option("-D", req->defines, "override a top-level constant: NAME=VALUE");
  cmd->add_option("-o", req->output, "write the source to this file instead of stdout");
  cmd->add_flag("--compile", req->compile, "also compile with NVRTC and report registers and spills");
  cmd->callback([req] { run_emit(*req); });
}

}  // namespace tilevm::cli
