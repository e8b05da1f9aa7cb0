// NVRTC compilation to cubins (no GPU needed): ELF images for sm_80 and sm_90a, inline PTX for the
// instructions tilevm emits (mma.sync, ldmatrix, cp.async, wgmma), and NVRTC's log in errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime_test_kernels.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"

namespace tilevm::runtime {
namespace {

using testing::kMmaTile;
using testing::kSaxpy;

// wgmma.fence exists only on sm_90a.
const char* const kWgmmaFence = R"(
extern "C" __global__ void fence_only(float* out) {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  out[threadIdx.x] = 1.0f;
}
)";

void expect_cubin(const CompiledKernel& kernel) {
  ASSERT_GE(kernel.cubin.size(), 64u);
  EXPECT_EQ(std::string(kernel.cubin.data(), 4), std::string("\x7f"
                                                             "ELF",
                                                             4));
  // e_machine (offset 18, little-endian) is EM_CUDA = 190.
  auto machine = static_cast<std::uint16_t>(static_cast<unsigned char>(kernel.cubin[18]) |
                                            (static_cast<unsigned char>(kernel.cubin[19]) << 8));
  EXPECT_EQ(machine, 190);
}

class RuntimeNvrtc : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nvrtc_available()) GTEST_SKIP() << "libnvrtc cannot be loaded on this machine";
  }
};

TEST_F(RuntimeNvrtc, VersionIsTwelveOrNewer) {
  NvrtcVersion version = nvrtc_version();
  EXPECT_GE(version.major, 12);
  std::string identity = nvrtc_identity();
  EXPECT_EQ(identity.rfind(fmt::format("{}.{} ", version.major, version.minor), 0), 0u) << identity;
  EXPECT_NE(identity.find("libnvrtc"), std::string::npos) << identity;
}

TEST_F(RuntimeNvrtc, SaxpyCompilesToElfForEachArch) {
  for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"}) {
    SCOPED_TRACE(arch);
    CompiledKernel kernel = compile_cuda(kSaxpy, "saxpy.cu", CompileOptions{.arch = arch});
    expect_cubin(kernel);
  }
}

TEST_F(RuntimeNvrtc, DifferentArchsGiveDifferentCubins) {
  CompiledKernel a = compile_cuda(kSaxpy, "saxpy.cu", CompileOptions{.arch = "sm_80"});
  CompiledKernel b = compile_cuda(kSaxpy, "saxpy.cu", CompileOptions{.arch = "sm_90a"});
  EXPECT_NE(a.cubin, b.cubin);
}

TEST_F(RuntimeNvrtc, InlinePtxMmaLdmatrixCpAsyncCompiles) {
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    CompiledKernel kernel = compile_cuda(kMmaTile, "mma_tile.cu", CompileOptions{.arch = arch});
    expect_cubin(kernel);
  }
}

TEST_F(RuntimeNvrtc, WgmmaNeedsSm90a) {
  expect_cubin(compile_cuda(kWgmmaFence, "fence.cu", CompileOptions{.arch = "sm_90a"}));
  try {
    compile_cuda(kWgmmaFence, "fence.cu", CompileOptions{.arch = "sm_90"});
    FAIL() << "wgmma compiled for sm_90";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("nvrtc could not compile 'fence.cu' for sm_90"), std::string::npos) << message;
    EXPECT_NE(message.find("wgmma"), std::string::npos) << message;
  }
}

TEST_F(RuntimeNvrtc, SyntaxErrorCarriesTheLog) {
  const char* bad = "extern \"C\" __global__ void broken(float* x) {\n  x[0] = y;\n}\n";
  try {
    compile_cuda(bad, "broken.cu", CompileOptions{.arch = "sm_80"});
    FAIL() << "a syntax error compiled";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind("nvrtc could not compile 'broken.cu' for sm_80 (NVRTC_ERROR_COMPILATION):\n", 0),
              0u)
        << message;
    EXPECT_NE(message.find("broken.cu(2): error: identifier \"y\" is undefined"), std::string::npos)
        << message;
  }
}

TEST_F(RuntimeNvrtc, WarningsAreReturnedInTheLog) {
  const char* warns = "extern \"C\" __global__ void w(float* x) { int unused_variable = 3; x[0] = 1.0f; }\n";
  CompiledKernel kernel = compile_cuda(warns, "warns.cu", CompileOptions{.arch = "sm_80"});
  expect_cubin(kernel);
  EXPECT_NE(kernel.log.find("unused_variable"), std::string::npos) << kernel.log;
}

TEST_F(RuntimeNvrtc, Bf16AndFastMathAndLineInfo) {
  const char* source = R"(
#include <cuda_bf16.h>
extern "C" __global__ void k(__nv_bfloat16* x, float* y) { y[0] = __expf(__bfloat162float(x[0])); }
)";
  expect_cubin(compile_cuda(source, "bf16.cu",
                            CompileOptions{.arch = "sm_90a", .fast_math = true, .line_info = true}));
}

TEST(RuntimeNvrtcFlags, DefaultsAndOptions) {
  std::vector<std::string> flags = nvrtc_flags(CompileOptions{.arch = "sm_90a"});
  ASSERT_GE(flags.size(), 3u);
  EXPECT_EQ(flags[0], "-arch=sm_90a");
  EXPECT_EQ(flags[1], "-std=c++17");
  EXPECT_EQ(flags[2], "-default-device");
  for (const std::string& flag : flags) EXPECT_NE(flag, "--use_fast_math");

  std::vector<std::string> more = nvrtc_flags(CompileOptions{.arch = "sm_80",
                                                             .fast_math = true,
                                                             .line_info = true,
                                                             .include_dirs = {"/x"},
                                                             .extra_flags = {"-DN=4"}});
  auto has = [&](const std::string& f) { return std::find(more.begin(), more.end(), f) != more.end(); };
  EXPECT_TRUE(has("--use_fast_math"));
  EXPECT_TRUE(has("-lineinfo"));
  EXPECT_TRUE(has("-I/x"));
  EXPECT_EQ(more.back(), "-DN=4");
}

TEST(RuntimeNvrtcFlags, RejectsVirtualAndMalformedArchs) {
  for (const char* arch : {"compute_80", "sm80", "sm_8", "", "sm_90b", "-arch=sm_80"}) {
    SCOPED_TRACE(arch);
    try {
      nvrtc_flags(CompileOptions{.arch = arch});
      FAIL() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                fmt::format("unsupported architecture '{}': expected a real one such as "
                            "sm_80, sm_89 or sm_90a",
                            arch));
    }
  }
  EXPECT_NO_THROW(nvrtc_flags(CompileOptions{.arch = "sm_100a"}));
  EXPECT_NO_THROW(nvrtc_flags(CompileOptions{.arch = "sm_120"}));
}

}  // namespace
}  // namespace tilevm::runtime
