// The "plain streaming read" baseline (docs/performance.md): the time a kernel that only reads N bytes
// takes, the honest limit of a memory-bound kernel of the same bytes (launch, ramp-up and tail included).
//
// The kernel reads the bytes with 16-byte read-only loads, several in flight per thread, xors every 32-bit
// word into one value per thread and writes one word per block (the xor over its threads), so no load can
// be dropped; the bytes past the last whole 16 are read one by one by thread 0 of block 0. Xor of the words
// is order-free, so the xor of the block words equals plain_read_fold() of the bytes (tests use that to check
// that every byte was read). Several launch configurations are timed (plain_read_configs()) and the best
// median kept.
//
//   PlainRead reader(device);
//   PlainReadResult r = reader.measure(stream, 34'000'000, {.repeats = 50});   // r.us, r.config
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tilevm/runtime/device.h"
#include "tilevm/runtime/module.h"
#include "tilevm/tune/timing.h"

namespace tilevm::bench {

// GPU timing is the tuner's (tune/timing.h); the benchmarks time the same way.
using tune::time_gpu;
using tune::Timing;
using tune::TimingOptions;

// One launch configuration of the read kernel.
struct PlainReadConfig {
  int threads = 256;      // per block
  int unroll = 4;         // 16-byte loads in flight per thread per iteration
  int blocks_per_sm = 0;  // > 0: a grid of blocks_per_sm * SMs blocks striding over the data;
                          // 0: one tile (threads * unroll loads) per block, as many blocks as tiles
  // "t256_u4_8xsm" or "t256_u4_tiles".
  std::string name() const;
  bool operator==(const PlainReadConfig&) const = default;
};

// The configurations measure() tries (12): persistent grids at full occupancy and one-tile-per-block grids.
std::vector<PlainReadConfig> plain_read_configs();

// The grid (blocks) of `config` for `bytes` on `sm_count` SMs: never more blocks than tiles of data, at
// least 1.
std::uint64_t plain_read_grid(const PlainReadConfig& config, std::uint64_t bytes, int sm_count);

// The host reference of the kernel's result: the xor of the little-endian 32-bit words of `bytes`
// (zero-padded to a multiple of 4).
std::uint32_t plain_read_fold(std::span<const std::uint8_t> bytes);

struct PlainReadResult {
  double us = 0;       // median of the best configuration
  std::string config;  // its name
  std::uint64_t bytes = 0;
  double gbps() const { return us > 0 ? static_cast<double>(bytes) / us * 1e-3 : 0; }
};

// The read kernels of one device (compiled once through the kernel cache) and the buffer they read, which
// grows to the largest size asked for and is then reused (random content, written on the device).
class PlainRead {
 public:
  // Compiles (or finds in the kernel cache) and loads the kernels. @throws tilevm::Error on a compile or CUDA
  // error.
  explicit PlainRead(const runtime::Device& device);

  // Times every configuration on `bytes` bytes of the buffer and returns the best.
  // @throws tilevm::Error when bytes is 0 or on a CUDA error.
  PlainReadResult measure(const runtime::Stream& stream, std::uint64_t bytes, const TimingOptions& timing);

  // Enqueues one read of `bytes` bytes at device address `data` (16-byte aligned) with `config`, the block
  // words going to `out` (plain_read_grid(...) u32 words).
  void launch(const runtime::Stream& stream, const PlainReadConfig& config, std::uint64_t data,
              std::uint64_t bytes, std::uint64_t out) const;

  // Reads `bytes` bytes at `data` with `config` and returns the xor of the block words (synchronizes).
  std::uint32_t fold(const runtime::Stream& stream, const PlainReadConfig& config, std::uint64_t data,
                     std::uint64_t bytes);

  // The process-wide reader of `device` (one per device ordinal, made on first use, never destroyed).
  static PlainRead& shared(const runtime::Device& device);

 private:
  void ensure_buffer(const runtime::Stream& stream, std::uint64_t bytes);
  void ensure_out(std::uint64_t words);
  const runtime::Kernel& kernel(const PlainReadConfig& config) const;

  runtime::Device device_;
  runtime::Module module_;
  std::vector<std::pair<PlainReadConfig, runtime::Kernel>> kernels_;
  runtime::Kernel fill_;
  runtime::DeviceBuffer buffer_;
  runtime::DeviceBuffer out_;
};

// The GPU kernels' CUDA source (for tests: it compiles with NVRTC without a device).
const std::string& plain_read_source();

// One-shot forms of PlainRead::shared(device).measure(...).
PlainReadResult measure_plain_read(const runtime::Device& device, const runtime::Stream& stream,
                                   std::uint64_t bytes, const TimingOptions& timing);

// The read bandwidth of a large stream, the ceiling of docs/performance.md: the best plain read of 1 GiB (or
// of an eighth of the device's memory when that is less), in GB/s (1e9 bytes per second).
double measure_read_bandwidth_gbps(const runtime::Device& device, const runtime::Stream& stream,
                                   const TimingOptions& timing);

}  // namespace tilevm::bench
