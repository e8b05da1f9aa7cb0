// The lowering pipeline (lower.h): the passes in order, one per line.
#include "tilevm/transform/lower.h"

#include <fmt/format.h>

#include "tilevm/ir/printer.h"
#include "tilevm/ir/verifier.h"
#include "tilevm/support/error.h"
#include "tilevm/transform/analyze_nan_payload.h"
#include "tilevm/transform/infer_threads.h"
#include "tilevm/transform/plan_shared_memory.h"

namespace tilevm::transform {

namespace {

struct Pass {
  const char* name;
  ir::Program (*run)(ir::Program);
};

// The pipeline. A pass reads what the passes above it recorded in the program.
constexpr Pass kPipeline[] = {
    {"infer_threads", infer_threads},
    {"analyze_nan_payload", analyze_nan_payload},
    {"plan_shared_memory", plan_shared_memory},
};

}  // namespace

const std::vector<std::string>& lowering_passes() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Pass& p : kPipeline) out.emplace_back(p.name);
    return out;
  }();
  return names;
}

std::optional<ir::Program> lower(ir::Program program, Diagnostics& diags, const LowerOptions& options) {
  if (!ir::verify_program(program, diags)) return std::nullopt;
  for (const Pass& pass : kPipeline) {
    program = pass.run(std::move(program));
    if (options.verify_each_pass) {
      Diagnostics after;
      if (!ir::verify_program(program, after))
        throw InternalError(fmt::format("pass {} left an invalid program:\n{}{}", pass.name,
                                        after.render(program.name, ""), ir::print_program(program)));
    }
    if (options.after_pass) options.after_pass(pass.name, program);
  }
  return program;
}

ir::Program lower(ir::Program program, const LowerOptions& options) {
  Diagnostics diags;
  const std::string name = program.name;
  std::optional<ir::Program> lowered = lower(std::move(program), diags, options);
  if (!lowered) fail("'{}' is not a valid program:\n{}", name, diags.render(name, ""));
  return *std::move(lowered);
}

}  // namespace tilevm::transform
