// Streams and memory that tilevm does not own (Device::wrap_stream, Device::wrap_memory): what a PyTorch
// caller hands over. Skipped (and reported as skipped) where there is no GPU.
#include <gtest/gtest.h>

#include <vector>

#include "runtime_test_kernels.h"
#include "tilevm/runtime/device.h"
#include "tilevm/runtime/kernel_cache.h"
#include "tilevm/runtime/module.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"

namespace tilevm::runtime {
namespace {

class RuntimeWrapGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Device::available()) GTEST_SKIP() << "no GPU";
    if (!nvrtc_available()) GTEST_SKIP() << "libnvrtc cannot be loaded";
    device_ = Device::open();
  }
  std::optional<Device> device_;
};

TEST_F(RuntimeWrapGpu, LaunchesOnWrappedStreamAndMemoryAndLeavesThemAlive) {
  KernelCache cache(KernelCacheOptions{.use_disk = false});
  auto compiled = cache.get_or_compile("saxpy", testing::kSaxpy, "saxpy.cu", {.arch = device_->arch()});
  Module module = Module::load(*device_, compiled->cubin, "saxpy.cu");
  Kernel saxpy = module.kernel("saxpy");

  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i), y[i] = static_cast<float>(-2 * i + 1);
  // The "caller's" objects: a stream and two buffers that outlive the wrappers.
  Stream owner_stream = device_->create_stream();
  DeviceBuffer owner_x = device_->allocate(n * sizeof(float));
  DeviceBuffer owner_y = device_->allocate(n * sizeof(float));
  owner_x.upload(std::span<const float>(x));
  owner_y.upload(std::span<const float>(y));
  {
    Stream stream = device_->wrap_stream(owner_stream.handle());
    DeviceBuffer wx = device_->wrap_memory(owner_x.device_ptr(), owner_x.size());
    DeviceBuffer wy = device_->wrap_memory(owner_y.device_ptr(), owner_y.size());
    EXPECT_FALSE(wx.owns_memory());
    EXPECT_EQ(stream.handle(), owner_stream.handle());
    saxpy.launch({.grid = {(n + 255) / 256}, .block = {256}}, stream, n, 3.0f, wx.device_ptr(),
                 wy.device_ptr());
    stream.synchronize();
    // Ranges are checked as for owned memory.
    try {
      wy.copy_to_host(y.data(), (n + 1) * sizeof(float));
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("outside the device buffer of 4000 bytes"), std::string::npos)
          << e.what();
    }
  }
  // The wrappers are gone; the stream and memory still work.
  owner_stream.synchronize();
  std::vector<float> out = owner_y.download<float>();
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(out[i], 3.0f * static_cast<float>(i) + static_cast<float>(-2 * i + 1)) << i;
  saxpy.launch({.grid = {(n + 255) / 256}, .block = {256}}, owner_stream, n, 1.0f, owner_x.device_ptr(),
               owner_y.device_ptr());
  owner_stream.synchronize();
}

TEST_F(RuntimeWrapGpu, WrappingAddressZeroIsAnError) {
  try {
    device_->wrap_memory(0, 16);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot wrap 16 bytes at device address 0"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tilevm::runtime
