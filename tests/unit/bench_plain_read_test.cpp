// The plain streaming read baseline: host-side pieces (the fold reference, grids, configurations), the
// kernels compiled by NVRTC without a GPU, and on a GPU the fold of odd sizes against the host and a
// measurement. On a GPU machine: tilevm_unit_tests --gtest_filter='BenchPlainRead*'
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <optional>
#include <regex>
#include <set>
#include <span>
#include <vector>

#include "tilevm/bench/plain_read.h"
#include "tilevm/runtime/device.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"

namespace tilevm::bench {
namespace {

TEST(BenchPlainRead, FoldIsTheXorOfLittleEndianWords) {
  EXPECT_EQ(plain_read_fold({}), 0u);
  const std::vector<std::uint8_t> one = {0xab};
  EXPECT_EQ(plain_read_fold(one), 0xabu);
  const std::vector<std::uint8_t> word = {0x01, 0x02, 0x03, 0x04};
  EXPECT_EQ(plain_read_fold(word), 0x04030201u);
  // Two words and a zero-padded tail of two bytes.
  const std::vector<std::uint8_t> bytes = {0x01, 0x02, 0x03, 0x04, 0x10, 0x20, 0x30, 0x40, 0xff, 0xee};
  EXPECT_EQ(plain_read_fold(bytes), 0x04030201u ^ 0x40302010u ^ 0x0000eeffu);
}

TEST(BenchPlainRead, ConfigurationsAreTwelveDistinctOnes) {
  const std::vector<PlainReadConfig> configs = plain_read_configs();
  EXPECT_EQ(configs.size(), 12u);
  std::set<std::string> names;
  for (const PlainReadConfig& c : configs) {
    EXPECT_TRUE(names.insert(c.name()).second) << c.name();
    EXPECT_EQ(c.threads % 32, 0) << c.name();
    EXPECT_LE(c.threads, 1024) << c.name();
    if (c.blocks_per_sm > 0) {
      EXPECT_LE(c.threads * c.blocks_per_sm, 2048) << c.name();
    }
  }
  EXPECT_EQ((PlainReadConfig{.threads = 256, .unroll = 4, .blocks_per_sm = 8}).name(), "t256_u4_8xsm");
  EXPECT_EQ((PlainReadConfig{.threads = 128, .unroll = 2, .blocks_per_sm = 0}).name(), "t128_u2_tiles");
}

TEST(BenchPlainRead, GridCoversTheDataWithoutIdleBlocks) {
  const PlainReadConfig tiles{.threads = 256, .unroll = 4, .blocks_per_sm = 0};
  const PlainReadConfig persistent{.threads = 256, .unroll = 4, .blocks_per_sm = 8};
  // One tile is 256 * 4 loads of 16 bytes = 16384 bytes.
  EXPECT_EQ(plain_read_grid(tiles, 1, 132), 1u);
  EXPECT_EQ(plain_read_grid(tiles, 16384, 132), 1u);
  EXPECT_EQ(plain_read_grid(tiles, 16384 + 16, 132), 2u);
  EXPECT_EQ(plain_read_grid(tiles, std::uint64_t{1} << 30, 132), (std::uint64_t{1} << 30) / 16384);
  EXPECT_EQ(plain_read_grid(persistent, 16384 * 3, 132), 3u);
  EXPECT_EQ(plain_read_grid(persistent, std::uint64_t{1} << 30, 132), 8u * 132);
}

TEST(BenchPlainRead, KernelsCompileForSm80AndSm90) {
  if (!runtime::nvrtc_available()) GTEST_SKIP() << "NVRTC is not available";
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    runtime::CompileOptions options{.arch = arch};
    options.extra_flags.push_back("-Xptxas=-v");
    runtime::CompiledKernel k;
    ASSERT_NO_THROW(k = runtime::compile_cuda(plain_read_source(), "plain_read.cu", options));
    EXPECT_GT(k.cubin.size(), 4u);
    // Every kernel fits its registers: a spill would put local-memory traffic into a bandwidth measurement.
    EXPECT_FALSE(std::regex_search(k.log, std::regex("[1-9][0-9]* bytes spill stores"))) << k.log;
  }
}

std::string why_no_gpu() {
  try {
    if (runtime::Device::count() == 0) return "the driver reports no CUDA device";
  } catch (const Error& e) {
    return e.what();
  }
  if (!runtime::nvrtc_available()) return "libnvrtc cannot be loaded";
  return "";
}

class BenchPlainReadGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no GPU: " << why;
    device_ = runtime::Device::open();
  }
  std::optional<runtime::Device> device_;
};

TEST_F(BenchPlainReadGpu, FoldOfOddSizesMatchesTheHost) {
  runtime::Stream stream = device_->create_stream();
  PlainRead reader(*device_);
  // Odd sizes: below one load, a tail of every length, several tiles and a grid-stride remainder.
  const std::vector<std::uint64_t> sizes = {1, 15, 16, 17, 1000, 65536 + 3, 1234567, 8 * 1024 * 1024 + 11};
  std::vector<std::uint8_t> host(sizes.back());
  std::uint64_t state = 12345;
  for (std::uint8_t& b : host) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    b = static_cast<std::uint8_t>(state >> 56);
  }
  runtime::DeviceBuffer data = device_->allocate(host.size() + 16);
  data.copy_from_host(host.data(), host.size());
  for (std::uint64_t bytes : sizes) {
    const std::uint32_t expected = plain_read_fold(std::span<const std::uint8_t>(host.data(), bytes));
    for (const PlainReadConfig& c : plain_read_configs()) {
      SCOPED_TRACE(fmt::format("{} bytes, {}", bytes, c.name()));
      EXPECT_EQ(reader.fold(stream, c, data.device_ptr(), bytes), expected);
    }
  }
}

TEST_F(BenchPlainReadGpu, MeasureReturnsTheBestConfiguration) {
  runtime::Stream stream = device_->create_stream();
  PlainRead reader(*device_);
  const std::uint64_t bytes = 64u << 20;
  PlainReadResult r = reader.measure(stream, bytes, {.warmup = 1, .repeats = 5});
  EXPECT_GT(r.us, 0);
  EXPECT_EQ(r.bytes, bytes);
  EXPECT_FALSE(r.config.empty());
  // 64 MB cannot be read at more than a few TB/s, nor slower than 50 GB/s on any sm_80+ GPU.
  EXPECT_LT(r.gbps(), 10000);
  EXPECT_GT(r.gbps(), 50);
  std::cout << "[ plain read ] 64 MiB: " << r.us << " us (" << r.gbps() << " GB/s) with " << r.config << "\n";
}

TEST_F(BenchPlainReadGpu, ReadBandwidthIsPlausible) {
  runtime::Stream stream = device_->create_stream();
  const double gbps = measure_read_bandwidth_gbps(*device_, stream, {.warmup = 1, .repeats = 5});
  std::cout << "[ plain read ] ceiling: " << gbps << " GB/s\n";
  EXPECT_GT(gbps, 100);
  EXPECT_LT(gbps, 20000);
}

}  // namespace
}  // namespace tilevm::bench
