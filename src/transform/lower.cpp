// The lowering pipeline (lower.h): the passes in order, one per line.
#include "tilevm/transform/lower.h"

#include <fmt/format.h>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/printer.h"
#include "tilevm/ir/verifier.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/support/error.h"
#include "tilevm/target/limits.h"
#include "tilevm/tile/infer_layouts.h"
#include "tilevm/tile/insert_barriers.h"
#include "tilevm/tile/lower_parallel.h"
#include "tilevm/tile/lower_tile_ops.h"
#include "tilevm/tile/pipeline_loops.h"
#include "tilevm/tile/split_register_gemms.h"
#include "tilevm/transform/analyze_nan_payload.h"
#include "tilevm/transform/infer_threads.h"
#include "tilevm/transform/plan_shared_memory.h"

namespace tilevm::transform {

namespace {

struct Pass {
  const char* name;
  // The program after the pass, or nullopt after reporting to the diagnostics (the tile layer's passes
  // can meet a program no layout satisfies; the VM's passes cannot fail).
  std::optional<ir::Program> (*run)(ir::Program, Diagnostics&, const target::Target&);
};

template <ir::Program (*F)(ir::Program)>
std::optional<ir::Program> infallible(ir::Program p, Diagnostics&, const target::Target&) {
  return F(std::move(p));
}

// The pipeline. A pass reads what the passes above it recorded in the program. The tile layer's passes
// (src/tile/) come first and leave a program without tile operators; on one that has none they change
// nothing.
constexpr Pass kPipeline[] = {
    {"infer_threads", infallible<infer_threads>},
    {"split_register_gemms", tile::split_register_gemms},
    {"infer_layouts", tile::infer_layouts},
    {"pipeline_loops", tile::pipeline_loops},
    {"insert_barriers", infallible<tile::insert_barriers>},
    {"lower_parallel", tile::lower_parallel},
    {"lower_tile_ops", tile::lower_tile_ops},
    {"analyze_nan_payload", infallible<analyze_nan_payload>},
    {"plan_shared_memory", infallible<plan_shared_memory>},
};

// After plan_shared_memory: the shared tensors and barriers live at once against the most any GPU offers a
// block (the verifier checks each tensor alone; only the plan knows which ones overlap). Reported at the
// first allocation whose range ends past the limit.
class SharedLimitCheck : public ir::IRVisitor {
 public:
  SharedLimitCheck(const ir::Program& program, Diagnostics& diags) : program_(program), diags_(diags) {}
  void visit_inst_stmt(const ir::InstStmt& s) override {
    if (const auto* a = s.inst->as<ir::AllocateSharedInst>())
      check(a->loc, a->placement,
            fmt::format("this tensor ({} bytes)", a->placement ? a->placement->bytes : 0));
    if (const auto* b = s.inst->as<ir::AllocateBarrierInst>())
      check(b->loc, b->placement,
            fmt::format("this barrier array ({} bytes)", b->placement ? b->placement->bytes : 0));
    ir::IRVisitor::visit_inst_stmt(s);
  }
  // When no single allocation ends past the limit (the plan's total counts alignment padding), the error
  // goes to the kernel's definition.
  void finish() {
    if (!reported_)
      diags_.error(program_.loc,
                   "'{}' needs {} bytes of shared memory per block; a GPU block has at most {} ({} KiB)",
                   program_.name, program_.shared_bytes.value_or(0), target::kMaxSharedPerBlock,
                   target::kMaxSharedPerBlock / 1024);
  }

 private:
  void check(SourceLoc loc, const std::optional<ir::SharedPlacement>& placement, const std::string& what) {
    const int64_t end = placement ? placement->offset + placement->bytes : 0;
    if (reported_ || end <= target::kMaxSharedPerBlock) return;
    reported_ = true;
    diags_.error(loc,
                 "'{}' needs {} bytes of shared memory per block: {} is placed at bytes [{}, {}) beside the "
                 "shared tensors live with it; a GPU block has at most {} ({} KiB)",
                 program_.name, program_.shared_bytes.value_or(0), what, placement->offset, end,
                 target::kMaxSharedPerBlock, target::kMaxSharedPerBlock / 1024);
  }

 private:
  const ir::Program& program_;
  Diagnostics& diags_;
  bool reported_ = false;
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
    std::optional<ir::Program> next = pass.run(std::move(program), diags, options.target);
    if (!next) return std::nullopt;
    program = *std::move(next);
    if (options.verify_each_pass) {
      Diagnostics after;
      if (!ir::verify_program(program, after))
        throw InternalError(fmt::format("pass {} left an invalid program:\n{}{}", pass.name,
                                        after.render(program.name, ""), ir::print_program(program)));
    }
    if (options.after_pass) options.after_pass(pass.name, program);
  }
  if (program.shared_bytes.value_or(0) > target::kMaxSharedPerBlock) {
    SharedLimitCheck check(program, diags);
    check.visit_program(program);
    check.finish();
    return std::nullopt;
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
