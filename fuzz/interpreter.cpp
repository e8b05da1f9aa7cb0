// Fuzz target: the interpreter on .tile programs that pass the verifier (`tilevm run --interp`).
//
// Each program that verifies and lowers runs its first two blocks, every pointer parameter on a buffer of
// kBufferBytes filled with a fixed pattern (so floats include NaN and inf codes, and views that leave the
// buffer are reported), every scalar parameter 16, under a memory budget and a step budget so that no input
// exhausts the machine or runs forever. Fails when the run throws or crashes, or reports a diagnostic
// without a location in the input (fuzz/README.md).
#include <map>
#include <vector>

#include "tile_input.h"
#include "tile_mutator.h"
#include "tilevm/interp/interpreter.h"

namespace {

constexpr size_t kBufferBytes = 1 << 14;
constexpr int64_t kMaxMemory = int64_t{64} << 20;
// 2^20 steps: under the fuzz build's sanitizers a step of a warp-specialized GEMM example (regions run under
// several schedules, race-checked) costs a few microseconds, and 2^22 ran past libFuzzer's 10 s timeout.
constexpr int64_t kMaxSteps = int64_t{1} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tilevm;
  const std::string_view source = fuzz::as_text(data, size);
  // Every other input (by its length) runs the Hopper lowering: TMA pipelines, wgmma, warp specialization.
  const std::optional<ir::Program> program = fuzz::compile_checked(
      source, nullptr, size % 2 ? target::Target::h100_sxm() : target::Target::generic_sm80());
  if (!program) return 0;
  std::map<std::string, std::vector<uint8_t>> storage;
  interp::Arguments args;
  for (const ir::Var& p : program->params) {
    if (p->type.is_pointer()) {
      std::vector<uint8_t>& bytes = storage[p->name];
      bytes.resize(kBufferBytes);
      for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<uint8_t>(k * 37 + (k >> 8));
      args.buffers[p->name] = &bytes;
    } else {
      args.scalars[p->name] = interp::ScalarValue{false, 16, 0.0};
    }
  }
  interp::RunOptions options;
  options.num_blocks = 2;
  options.max_memory = kMaxMemory;
  options.max_steps = kMaxSteps;
  Diagnostics diags;
  try {
    interp::run_program(*program, args, diags, options);
  } catch (const std::exception& e) {
    fuzz::failure("the interpreter threw instead of reporting a located diagnostic", e.what());
  }
  fuzz::check_located(diags, source, "the interpreter");
  return 0;
}
