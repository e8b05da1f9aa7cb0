// Every example and every verifying test program is emitted and compiled by NVRTC for sm_80 and sm_90, and
// for sm_90a where sm_90 is refused for setmaxnreg (no GPU needed). Registers and spills per thread are
// reported from ptxas's verbose output. Skipped when libnvrtc cannot be loaded. Under AddressSanitizer every
// program is still emitted (the code generator is what the sanitizer watches) but only every fourth is
// compiled: NVRTC is not instrumented, the emitted source is the normal build's, and compiling all of them
// took three minutes of CI's ASan pass.
#include <gtest/gtest.h>

#include <iostream>
#include <regex>

#include "codegen_test_util.h"
#include "sanitized.h"
#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"

namespace tilevm {
namespace {

TEST(CodegenCompile, EveryProgramForSm80AndSm90) {
  if (!runtime::nvrtc_available()) GTEST_SKIP() << "NVRTC is not available";
  const auto programs = codegen_test::verifying_programs();
  ASSERT_GE(programs.size(), 5u);
  const size_t compile_every = test::under_asan<size_t>(4, 1);
  size_t index = 0;
  for (const auto& path : programs) {
    const bool compile = index++ % compile_every == 0;
    std::optional<ir::Program> p = codegen_test::load_program(path);
    ASSERT_TRUE(p);
    bool needs_sm90a = false;
    for (const char* arch : {"sm_80", "sm_90", "sm_90a"}) {
      // sm_90a (setmaxnreg, wgmma) only for the programs that sm_90 refuses for it.
      if (arch == std::string("sm_90a") && !needs_sm90a) continue;
      SCOPED_TRACE(path.filename().string() + " " + arch);
      codegen::cuda::EmittedKernel k;
      try {
        k = codegen::cuda::emit_cuda(*p, {.target = target::Target::for_arch(arch)});
      } catch (const Error& e) {
        const std::string what = e.what();
        // Hopper instructions (barriers, TMA copies) are refused for sm_80, with the reason.
        if (arch == std::string("sm_80") && what.find("needs sm_90 or newer") != std::string::npos) {
          std::cout << "[ refused  ] " << path.filename().string() << " " << arch << ": " << what << "\n";
          continue;
        }
        // A program sized for Hopper's shared memory (the tile layer's GEMM: 192 KiB of stages).
        if (arch == std::string("sm_80") && what.find("allows at most") != std::string::npos) {
          std::cout << "[ refused  ] " << path.filename().string() << " " << arch << ": " << what << "\n";
          continue;
        }
        // Register reallocation (setmaxnreg) needs sm_90a.
        if (arch == std::string("sm_90") && what.find("arch-specific target sm_90a") != std::string::npos) {
          std::cout << "[ refused  ] " << path.filename().string() << " " << arch << ": " << what << "\n";
          needs_sm90a = true;
          continue;
        }
        // A DotAsync with a in registers (wgmma's RS form) whose product is still in flight at a branch or
        // at its block's end is interpreted, not emitted (emit_wgmma.cpp).
        if (what.find("the GPU code needs its product retired") != std::string::npos) {
          std::cout << "[ refused  ] " << path.filename().string() << " " << arch << ": " << what << "\n";
          continue;
        }
        ADD_FAILURE() << "emit failed: " << what;
        continue;
      }
      if (!compile) continue;
      runtime::CompileOptions options{.arch = arch};
      options.extra_flags.push_back("-Xptxas=-v");
      try {
        const runtime::CompiledKernel c = runtime::compile_cuda(k.source, k.kernel_name + ".cu", options);
        EXPECT_GT(c.cubin.size(), 4u);
        std::smatch regs, spill;
        const std::regex r_regs("Used ([0-9]+) registers"), r_spill("([0-9]+) bytes spill stores");
        std::regex_search(c.log, regs, r_regs);
        std::regex_search(c.log, spill, r_spill);
        std::cout << "[ compiled ] " << path.filename().string() << " " << arch << ": "
                  << (regs.empty() ? "?" : regs[1].str()) << " registers, "
                  << (spill.empty() ? "?" : spill[1].str()) << " bytes spilled, " << k.dynamic_shared_bytes
                  << " bytes shared\n";
      } catch (const Error& e) {
        ADD_FAILURE() << "NVRTC failed: " << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace tilevm
