// The emitter reads its target (EmitOptions::target): the kernel names the target's arch, and a program
// beyond the target's per-block limits (threads, shared memory) is refused with the numbers instead of
// failing at launch.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "expect_error.h"
#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/parser.h"
#include "tilevm/target/target.h"
#include "tilevm/transform/lower.h"

namespace tilevm::codegen::cuda {
namespace {

// A block of `threads` threads that stages `elements` f32 values through shared memory.
ir::Program program(int threads, int elements) {
  const std::string source = fmt::format(R"(def stage<1>[threads={0}](f32* x_ptr):
    g = ViewGlobal(x_ptr, dtype=f32, shape=[{1}])
    a = LoadGlobal(g, spatial({0}).local({2}))
    s = AllocateShared(f32, shape=[{1}])
    StoreShared(a, s)
    Synchronize()
    b = LoadShared(s, spatial({0}).local({2}))
    StoreGlobal(b, g)
)",
                                         threads, elements, elements / threads);
  Diagnostics diags;
  std::optional<ir::Program> p = ir::parse_program(source, diags);
  EXPECT_TRUE(p) << diags.render("<test>", source);
  std::optional<ir::Program> lowered = transform::lower(*std::move(p), diags, {.verify_each_pass = true});
  EXPECT_TRUE(lowered) << diags.render("<test>", source);
  return *std::move(lowered);
}

TEST(CodegenTargetLimits, TheKernelNamesTheTargetArch) {
  const EmittedKernel k = emit_cuda(program(128, 1024), {.target = target::Target::for_arch("sm_90a")});
  EXPECT_NE(k.source.find("for sm_90a."), std::string::npos);
  EXPECT_EQ(k.dynamic_shared_bytes, 4096);
}

TEST(CodegenTargetLimits, SharedMemoryBeyondTheTargetIsAnErrorWithTheNumbers) {
  // 48 Ki f32 = 192 KiB: fits the H100 (227 KiB per block), not an A100 (163 KiB) nor sm_89 (99 KiB).
  const ir::Program p = program(256, 48 * 1024);
  EXPECT_EQ(emit_cuda(p, {.target = target::Target::h100_sxm()}).dynamic_shared_bytes, 196608);
  expect_error(
      [&] { emit_cuda(p, {.target = target::Target::generic_sm80()}); },
      "program 'stage' needs 196608 bytes of shared memory per block (196608 for its shared tensors, "
      "0 of scratch for element-wise paths); sm_80 (generic sm_80 (A100 SXM)) allows at most 166912");
  expect_error([&] { emit_cuda(p, {.target = target::Target::for_arch("sm_89")}); }, "allows at most 101376");
}

TEST(CodegenTargetLimits, ThreadsBeyondTheTargetAreAnError) {
  // The verifier refuses more threads than any GPU has (1024); a target may allow fewer.
  const ir::Program p = program(1024, 1024);
  target::Target small = target::Target::h100_sxm();
  small.max_threads_per_block = 512;
  expect_error([&] { emit_cuda(p, {.target = small}); },
               "program 'stage' needs 1024 threads per block; sm_90a (H100 SXM) allows at most 512");
}

}  // namespace
}  // namespace tilevm::codegen::cuda
