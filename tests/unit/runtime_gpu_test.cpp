// Tests that launch kernels: skipped (and reported as skipped) where there is no GPU or no driver.
// On a GPU machine: build-runtime/bin/tilevm_unit_tests --gtest_filter='RuntimeGpu*'
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "expect_error.h"
#include "runtime_test_kernels.h"
#include "tilevm/runtime/device.h"
#include "tilevm/runtime/kernel_cache.h"
#include "tilevm/runtime/module.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"

namespace tilevm::runtime {
namespace {

using testing::kMmaTile;
using testing::kSaxpy;

const char* const kBigShared = R"(
extern "C" __global__ void big_shared(float* out, int n) {
  extern __shared__ float s[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = static_cast<float>(i);
  __syncthreads();
  float acc = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc += s[n - 1 - i];
  out[threadIdx.x] = acc;
}
)";

std::string why_no_gpu() {
  try {
    return Device::count() > 0 ? "" : "the driver reports no CUDA device";
  } catch (const Error& e) {
    return e.what();
  }
}

// IEEE half bits of a small integer (|v| <= 2048).
std::uint16_t half_of(int v) {
  if (v == 0) return 0;
  std::uint16_t sign = v < 0 ? 0x8000 : 0;
  auto magnitude = static_cast<unsigned>(v < 0 ? -v : v);
  int exponent = std::bit_width(magnitude) - 1;
  auto mantissa = static_cast<std::uint16_t>((magnitude << (10 - exponent)) & 0x3ff);
  return static_cast<std::uint16_t>(sign | ((exponent + 15) << 10) | mantissa);
}

class RuntimeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no GPU: " << why;
    device_ = Device::open();
    if (!nvrtc_available()) GTEST_SKIP() << "libnvrtc cannot be loaded";
  }

  Module compile_and_load(const char* source, const char* name) {
    CompileOptions options{.arch = device_->arch()};
    std::shared_ptr<const CompiledKernel> compiled = cache_.get_or_compile(name, source, name, options);
    return Module::load(*device_, compiled->cubin, name);
  }

  std::optional<Device> device_;
  KernelCache cache_{KernelCacheOptions{.use_disk = false}};
};

TEST_F(RuntimeGpu, DeviceInfo) {
  const DeviceInfo& info = device_->info();
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.compute_major, 8);
  EXPECT_EQ(info.arch, arch_for_compute_capability(info.compute_major, info.compute_minor));
  EXPECT_GT(info.sm_count, 0);
  EXPECT_GE(info.max_shared_per_block_optin, info.max_shared_per_block);
  EXPECT_GT(info.total_memory, 0u);
  EXPECT_GE(info.driver_version, 12000);
  std::printf("device %d: %s, %s, %d SMs, %d bytes opt-in shared memory per block, driver %d, nvrtc %s\n",
              info.ordinal, info.name.c_str(), info.arch.c_str(), info.sm_count,
              info.max_shared_per_block_optin, info.driver_version, nvrtc_identity().c_str());
}

TEST_F(RuntimeGpu, SaxpyMatchesTheHostOverSizes) {
  Module module = compile_and_load(kSaxpy, "saxpy.cu");
  Kernel saxpy = module.kernel("saxpy");
  EXPECT_GT(saxpy.attributes().registers, 0);
  Stream stream = device_->create_stream();
  for (int n : {1, 31, 256, 1000, (1 << 20) + 3}) {
    SCOPED_TRACE(n);
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i % 1000);
      y[i] = static_cast<float>(2 * (i % 7));
    }
    DeviceBuffer dx = device_->allocate(n * sizeof(float));
    DeviceBuffer dy = device_->allocate(n * sizeof(float));
    dx.upload(std::span<const float>(x));
    dy.copy_from_host_async(y.data(), y.size() * sizeof(float), stream);
    unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    saxpy.launch({.grid = {blocks}, .block = {256}}, stream, n, 3.0f, dx.device_ptr(), dy.device_ptr());
    stream.synchronize();
    std::vector<float> result = dy.download<float>();
    for (int i = 0; i < n; ++i) ASSERT_EQ(result[i], 3.0f * x[i] + y[i]) << "at " << i;
  }
}

TEST_F(RuntimeGpu, RawArgumentArrayLaunch) {
  Module module = compile_and_load(kSaxpy, "saxpy.cu");
  Kernel saxpy = module.kernel("saxpy");
  Stream stream = device_->create_stream();
  int n = 100;
  float a = 2.0f;
  std::vector<float> ones(n, 1.0f);
  DeviceBuffer x = device_->allocate(n * sizeof(float));
  DeviceBuffer y = device_->allocate(n * sizeof(float));
  x.upload(std::span<const float>(ones));
  y.fill_bytes(0);
  std::uint64_t px = x.device_ptr(), py = y.device_ptr();
  void* args[] = {&n, &a, &px, &py};
  saxpy.launch({.grid = {1}, .block = {128}}, stream, args);
  stream.synchronize();
  EXPECT_EQ(y.download<float>(), std::vector<float>(n, 2.0f));
}

TEST_F(RuntimeGpu, DynamicSharedMemoryAbove48KB) {
  Module module = compile_and_load(kBigShared, "big_shared.cu");
  Kernel kernel = module.kernel("big_shared");
  Stream stream = device_->create_stream();
  const int threads = 256;
  for (std::size_t bytes : {std::size_t{16 * 1024}, std::size_t{100 * 1024},
                            static_cast<std::size_t>(device_->info().max_shared_per_block_optin)}) {
    SCOPED_TRACE(bytes);
    int n = static_cast<int>(bytes / sizeof(float));
    DeviceBuffer out = device_->allocate(threads * sizeof(float));
    kernel.launch({.grid = {1}, .block = {threads}, .dynamic_shared_bytes = bytes}, stream, out.device_ptr(),
                  n);
    stream.synchronize();
    std::vector<float> result = out.download<float>();
    for (int t = 0; t < threads; ++t) {
      double expected = 0;
      for (int i = t; i < n; i += threads) expected += n - 1 - i;
      ASSERT_NEAR(result[t], expected, expected * 1e-5) << "thread " << t;
    }
  }
  std::size_t too_much = static_cast<std::size_t>(device_->info().max_shared_per_block_optin) + 1;
  try {
    kernel.launch({.grid = {1}, .block = {threads}, .dynamic_shared_bytes = too_much}, stream,
                  std::uint64_t{0}, 0);
    FAIL() << "launched with more shared memory than the device has";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'big_shared' asks for"), std::string::npos) << e.what();
  }
}

TEST_F(RuntimeGpu, InlinePtxMmaTileMatchesTheHost) {
  Module module = compile_and_load(kMmaTile, "mma_tile.cu");
  Kernel kernel = module.kernel("mma_tile");
  Stream stream = device_->create_stream();
  std::vector<int> a(16 * 16), b(16 * 8);
  for (int i = 0; i < 16 * 16; ++i) a[i] = (i * 7 + 3) % 7 - 3;
  for (int i = 0; i < 16 * 8; ++i) b[i] = (i * 5 + 1) % 5 - 2;
  std::vector<std::uint16_t> ha(a.size()), hb(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ha[i] = half_of(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) hb[i] = half_of(b[i]);
  DeviceBuffer da = device_->allocate(ha.size() * 2), db = device_->allocate(hb.size() * 2);
  DeviceBuffer dd = device_->allocate(32 * 4 * sizeof(float));
  da.upload(std::span<const std::uint16_t>(ha));
  db.upload(std::span<const std::uint16_t>(hb));
  kernel.launch({.grid = {1}, .block = {32}}, stream, da.device_ptr(), db.device_ptr(), dd.device_ptr());
  stream.synchronize();
  std::vector<float> d = dd.download<float>();
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      int row = lane / 4 + (i >= 2 ? 8 : 0);
      int col = 2 * (lane % 4) + (i % 2);
      int expected = 0;
      for (int k = 0; k < 16; ++k) expected += a[row * 16 + k] * b[k * 8 + col];
      EXPECT_EQ(d[lane * 4 + i], static_cast<float>(expected)) << "D[" << row << "][" << col << "]";
    }
}

TEST_F(RuntimeGpu, LaunchesFromSeveralThreads) {
  Module module = compile_and_load(kSaxpy, "saxpy.cu");
  Kernel saxpy = module.kernel("saxpy");
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Stream stream = device_->create_stream();
      int n = 4096;
      std::vector<float> x(n, static_cast<float>(t)), y(n, 1.0f);
      DeviceBuffer dx = device_->allocate(n * sizeof(float)), dy = device_->allocate(n * sizeof(float));
      dx.upload(std::span<const float>(x));
      dy.upload(std::span<const float>(y));
      for (int r = 0; r < 10; ++r)
        saxpy.launch({.grid = {16}, .block = {256}}, stream, n, 1.0f, dx.device_ptr(), dy.device_ptr());
      stream.synchronize();
      if (dy.download<float>() == std::vector<float>(n, 1.0f + 10.0f * static_cast<float>(t)))
        good.fetch_add(1);
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(good.load(), 4);
}

TEST_F(RuntimeGpu, EventsTimeAKernel) {
  Module module = compile_and_load(kSaxpy, "saxpy.cu");
  Kernel saxpy = module.kernel("saxpy");
  Stream stream = device_->create_stream();
  int n = 1 << 22;
  DeviceBuffer x = device_->allocate(n * sizeof(float)), y = device_->allocate(n * sizeof(float));
  x.fill_bytes_async(0, stream);
  y.fill_bytes_async(0, stream);
  Event start = device_->create_event(), end = device_->create_event();
  start.record(stream);
  saxpy.launch({.grid = {static_cast<unsigned>(n / 256)}, .block = {256}}, stream, n, 1.0f, x.device_ptr(),
               y.device_ptr());
  end.record(stream);
  end.synchronize();
  float ms = Event::elapsed_ms(start, end);
  EXPECT_GT(ms, 0.0f);
  EXPECT_LT(ms, 1000.0f);
}

TEST_F(RuntimeGpu, ErrorsNameTheModuleAndKernel) {
  Module module = compile_and_load(kSaxpy, "saxpy.cu");
  try {
    module.kernel("nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "module 'saxpy.cu' has no kernel 'nope'");
  }
  // A cubin for another major architecture is rejected by the driver with its own name for the error.
  std::string other = device_->info().compute_major == 8 ? "sm_90a" : "sm_80";
  CompiledKernel foreign = compile_cuda(kSaxpy, "foreign.cu", CompileOptions{.arch = other});
  try {
    Module::load(*device_, foreign.cubin, "foreign.cu");
    FAIL() << "a cubin for " << other << " loaded on " << device_->arch();
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind("CUDA error (cuModuleLoadDataEx): CUDA_ERROR_", 0), 0u) << message;
    EXPECT_NE(message.find("loading module 'foreign.cu'"), std::string::npos) << message;
  }
  std::vector<char> not_elf = {'a', 'b', 'c', 'd'};
  expect_error([&] { Module::load(*device_, not_elf, "junk"); }, "'junk' is not a cubin (no ELF header");
  DeviceBuffer small = device_->allocate(16);
  std::vector<char> big(32);
  try {
    small.copy_from_host(big.data(), big.size());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "copy to the device of 32 bytes at offset 0 is outside the device buffer of 16 bytes");
  }
}

TEST_F(RuntimeGpu, CubinFromTheDiskCacheLaunches) {
  auto dir = std::filesystem::temp_directory_path() /
             fmt::format("tilevm-gpu-cache-{}", static_cast<long>(getpid()));
  std::filesystem::remove_all(dir);
  CompileOptions options{.arch = device_->arch()};
  {
    KernelCache writer(KernelCacheOptions{.directory = dir});
    writer.get_or_compile("saxpy ir", kSaxpy, "saxpy.cu", options);
  }
  KernelCache reader(KernelCacheOptions{.directory = dir});
  auto compiled = reader.get_or_compile("saxpy ir", kSaxpy, "saxpy.cu", options);
  EXPECT_EQ(reader.stats().disk_hits, 1u);
  Module module = Module::load(*device_, compiled->cubin, "saxpy.cu");
  Stream stream = device_->create_stream();
  DeviceBuffer x = device_->allocate(64 * sizeof(float)), y = device_->allocate(64 * sizeof(float));
  std::vector<float> ones(64, 1.0f);
  x.upload(std::span<const float>(ones));
  y.upload(std::span<const float>(ones));
  module.kernel("saxpy").launch({.grid = {1}, .block = {64}}, stream, 64, 4.0f, x.device_ptr(),
                                y.device_ptr());
  stream.synchronize();
  EXPECT_EQ(y.download<float>(), std::vector<float>(64, 5.0f));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tilevm::runtime
