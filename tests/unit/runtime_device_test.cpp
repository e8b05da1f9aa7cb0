// The device-side API without a GPU: the no-driver message, arch selection, CUDA error wording and launch
// checks. (runtime_gpu_test.cpp holds the tests that need a GPU.)
#include <gtest/gtest.h>

#include "tilevm/runtime/cuda_error.h"
#include "tilevm/runtime/device.h"
#include "tilevm/runtime/launch.h"
#include "tilevm/support/error.h"

namespace tilevm::runtime {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RuntimeDevice, WithoutADriverOpenSaysSoClearly) {
  if (Device::available()) GTEST_SKIP() << "a CUDA device is present; this checks the message without one";
  std::string message = error_of([] { Device::open(); });
  // Either no libcuda at all, or a driver that finds no device.
  if (message.rfind("no CUDA driver found", 0) == 0) {
    EXPECT_EQ(message.rfind("no CUDA driver found (libcuda.so.1): ", 0), 0u) << message;
    EXPECT_TRUE(message.ends_with("; tilevm can still run programs on the interpreter (--interp)"))
        << message;
    EXPECT_EQ(error_of([] { Device::count(); }), message);  // the same message every time
  } else {
    EXPECT_NE(message.find("cuInit"), std::string::npos) << message;
  }
  EXPECT_FALSE(Device::available());
}

TEST(RuntimeDevice, ArchForComputeCapability) {
  EXPECT_EQ(arch_for_compute_capability(8, 0), "sm_80");
  EXPECT_EQ(arch_for_compute_capability(8, 6), "sm_86");
  EXPECT_EQ(arch_for_compute_capability(8, 7), "sm_87");
  EXPECT_EQ(arch_for_compute_capability(8, 9), "sm_89");
  EXPECT_EQ(arch_for_compute_capability(9, 0), "sm_90a");
  EXPECT_EQ(arch_for_compute_capability(10, 0), "sm_100");
  EXPECT_EQ(arch_for_compute_capability(12, 0), "sm_120");
  EXPECT_EQ(error_of([] { arch_for_compute_capability(7, 5); }),
            "compute capability 7.5 is not supported: tilevm needs sm_80 or newer");
}

TEST(RuntimeDevice, CudaErrorWording) {
  EXPECT_EQ(
      format_cuda_error(1, "CUDA_ERROR_INVALID_VALUE", "invalid argument", "cuLaunchKernel", "matmul_kernel"),
      "CUDA error in kernel 'matmul_kernel' (cuLaunchKernel): CUDA_ERROR_INVALID_VALUE: invalid argument");
  EXPECT_EQ(
      format_cuda_error(2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory", "cuMemAlloc", "",
                        "allocating 1024 bytes on device 0"),
      "CUDA error (cuMemAlloc): CUDA_ERROR_OUT_OF_MEMORY: out of memory, allocating 1024 bytes on device 0");
  EXPECT_EQ(format_cuda_error(12345, "", "", "cuInit", ""), "CUDA error (cuInit): CUDA error 12345");
}

TEST(RuntimeLaunch, AcceptsWhatFits) {
  LaunchLimits limits{.max_threads_per_block = 1024, .static_shared_bytes = 1024, .max_shared_optin = 232448};
  EXPECT_NO_THROW(check_launch_config({.grid = {132}, .block = {128}}, limits, "k"));
  EXPECT_NO_THROW(check_launch_config({.grid = {1, 65535, 65535}, .block = {32, 32, 1}}, limits, "k"));
  EXPECT_NO_THROW(
      check_launch_config({.grid = {1}, .block = {256}, .dynamic_shared_bytes = 232448 - 1024}, limits, "k"));
  EXPECT_FALSE(needs_shared_opt_in({.dynamic_shared_bytes = 48 * 1024}));
  EXPECT_TRUE(needs_shared_opt_in({.dynamic_shared_bytes = 48 * 1024 + 1}));
}

TEST(RuntimeLaunch, RejectsWithTheKernelsName) {
  LaunchLimits limits{.max_threads_per_block = 512, .static_shared_bytes = 1024, .max_shared_optin = 232448};
  EXPECT_EQ(error_of([&] { check_launch_config({.grid = {0}, .block = {128}}, limits, "matmul"); }),
            "kernel 'matmul' has an empty grid (0, 1, 1)");
  EXPECT_EQ(error_of([&] {
              check_launch_config({.grid = {1}, .block = {0, 1, 1}}, limits, "matmul");
            }),
            "kernel 'matmul' has an empty block (0, 1, 1)");
  EXPECT_EQ(error_of([&] { check_launch_config({.grid = {1}, .block = {1024}}, limits, "matmul"); }),
            "kernel 'matmul' cannot run with 1024 threads per block: at most 512");
  EXPECT_EQ(error_of([&] {
              check_launch_config({.grid = {1, 70000}, .block = {1}}, limits, "matmul");
            }),
            "kernel 'matmul' has a grid (1, 70000, 1) beyond CUDA's limits (2147483647, 65535, 65535)");
  EXPECT_EQ(error_of([&] {
              check_launch_config({.grid = {1}, .block = {1, 1, 128}}, limits, "matmul");
            }),
            "kernel 'matmul' has a block (1, 1, 128) beyond CUDA's limits (1024, 1024, 64)");
  EXPECT_EQ(error_of([&] {
              check_launch_config({.grid = {1}, .block = {128}, .dynamic_shared_bytes = 232448 - 1023},
                                  limits, "matmul");
            }),
            "kernel 'matmul' asks for 231425 bytes of dynamic shared memory (plus 1024 static) but the "
            "device allows "
            "232448 per block");
  EXPECT_NE(error_of([&] {
              check_launch_config({.grid = {1}, .block = {128}, .dynamic_shared_bytes = 300000}, limits,
                                  "matmul");
            }).find("asks for 300000 bytes"),
            std::string::npos);
}

}  // namespace
}  // namespace tilevm::runtime
