// The plain streaming read baseline (plain_read.h).
#include "tilevm/bench/plain_read.h"

#include "tilevm/support/int_math.h"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>

#include "tilevm/runtime/kernel_cache.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"

namespace tilevm::bench {
namespace {

// The kernels, one per (threads, unroll, grid kind), instantiated from one template by the wrappers that
// kernel_source() appends. Loads are ld.global.nc.L1::no_allocate: read-only data that is used once should
// not displace anything in L1. The folds are xors, so the result does not depend on which thread read what.
constexpr const char* kTemplate =
    R"(// plain_read.cu: read N bytes as fast as possible, xor them into one word per block.
typedef unsigned int u32;
typedef unsigned long long u64;

__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

__device__ __forceinline__ u32 fold4(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

// The bytes past the last whole 16, one by one, each shifted to its place in its little-endian word.
__device__ __forceinline__ u32 fold_tail(const uint4* data, u64 n16, u32 tail_bytes) {
  const unsigned char* tail = reinterpret_cast<const unsigned char*>(data + n16);
  u32 acc = 0;
  for (u32 t = 0; t < tail_bytes; ++t) acc ^= static_cast<u32>(tail[t]) << (8 * (t & 3));
  return acc;
}

// Xor of the block's accumulators, written by thread 0 to out[blockIdx.x].
template <int THREADS>
__device__ __forceinline__ void write_block_fold(u32 acc, u32* out) {
  for (int offset = 16; offset > 0; offset >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
  __shared__ u32 warp_acc[THREADS / 32];
  if ((threadIdx.x & 31) == 0) warp_acc[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    u32 total = 0;
    for (int w = 0; w < THREADS / 32; ++w) total ^= warp_acc[w];
    out[blockIdx.x] = total;
  }
}

// A grid of any size striding over the data, UNROLL loads in flight per thread per iteration.
template <int THREADS, int UNROLL>
__device__ __forceinline__ void read_grid(const uint4* __restrict__ data, u64 n16, u32 tail_bytes,
                                          u32* __restrict__ out) {
  const u64 stride = static_cast<u64>(gridDim.x) * THREADS;
  u64 i = static_cast<u64>(blockIdx.x) * THREADS + threadIdx.x;
  u32 acc = 0;
  for (; i + (UNROLL - 1) * stride < n16; i += UNROLL * stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = load_stream(data + i + u * stride);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc ^= fold4(v[u]);
  }
  for (; i < n16; i += stride) acc ^= fold4(load_stream(data + i));
  if (blockIdx.x == 0 && threadIdx.x == 0) acc ^= fold_tail(data, n16, tail_bytes);
  write_block_fold<THREADS>(acc, out);
}

// One tile of THREADS * UNROLL consecutive 16-byte words per block; the grid covers the data.
template <int THREADS, int UNROLL>
__device__ __forceinline__ void read_tiles(const uint4* __restrict__ data, u64 n16, u32 tail_bytes,
                                           u32* __restrict__ out) {
  const u64 base = static_cast<u64>(blockIdx.x) * (THREADS * UNROLL) + threadIdx.x;
  u32 acc = 0;
  if (base + (UNROLL - 1) * THREADS < n16) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = load_stream(data + base + u * THREADS);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc ^= fold4(v[u]);
  } else {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (base + u * THREADS < n16) acc ^= fold4(load_stream(data + base + u * THREADS));
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) acc ^= fold_tail(data, n16, tail_bytes);
  write_block_fold<THREADS>(acc, out);
}

__device__ __forceinline__ u32 mix(u64 x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<u32>(x);
}

// Fills n16 16-byte words with hash values, so the reads see random data.
extern "C" __global__ void plain_read_fill(uint4* data, u64 n16, u32 seed) {
  const u64 stride = static_cast<u64>(gridDim.x) * blockDim.x;
  for (u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n16; i += stride) {
    const u64 key = (i << 2) ^ (static_cast<u64>(seed) << 40);
    data[i] = make_uint4(mix(key), mix(key + 1), mix(key + 2), mix(key + 3));
  }
}
)";

constexpr std::uint64_t kVector = 16;  // bytes per load

std::string kernel_name(const PlainReadConfig& c) {
  return fmt::format("plain_read_t{}_u{}_{}", c.threads, c.unroll, c.blocks_per_sm > 0 ? "grid" : "tiles");
}

std::string build_source() {
  std::string source = kTemplate;
  std::vector<std::string> done;
  for (const PlainReadConfig& c : plain_read_configs()) {
    const std::string name = kernel_name(c);
    if (std::find(done.begin(), done.end(), name) != done.end()) continue;
    done.push_back(name);
    source += fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({0}) {1}(const uint4* data, u64 n16, u32 tail_bytes, "
        "u32* out) {{\n  {2}<{0}, {3}>(data, n16, tail_bytes, out);\n}}\n",
        c.threads, name, c.blocks_per_sm > 0 ? "read_grid" : "read_tiles", c.unroll);
  }
  return source;
}

runtime::Module load_module(const runtime::Device& device) {
  runtime::CompileOptions options{.arch = device.arch()};
  std::shared_ptr<const runtime::CompiledKernel> compiled = runtime::KernelCache::global().get_or_compile(
      "plain_read v1", plain_read_source(), "plain_read.cu", options);
  return runtime::Module::load(device, compiled->cubin, "plain_read.cu");
}

}  // namespace

std::string PlainReadConfig::name() const {
  return blocks_per_sm > 0 ? fmt::format("t{}_u{}_{}xsm", threads, unroll, blocks_per_sm)
                           : fmt::format("t{}_u{}_tiles", threads, unroll);
}

std::vector<PlainReadConfig> plain_read_configs() {
  // Persistent grids at full occupancy (2048 threads per SM on sm_80 and sm_90) with 4 or 8 loads in flight
  // per thread, and one-tile-per-block grids, which ramp up faster on small sizes.
  return {
      {.threads = 256, .unroll = 4, .blocks_per_sm = 8},  {.threads = 256, .unroll = 8, .blocks_per_sm = 8},
      {.threads = 512, .unroll = 4, .blocks_per_sm = 4},  {.threads = 512, .unroll = 8, .blocks_per_sm = 4},
      {.threads = 1024, .unroll = 4, .blocks_per_sm = 2}, {.threads = 1024, .unroll = 8, .blocks_per_sm = 2},
      {.threads = 128, .unroll = 4, .blocks_per_sm = 0},  {.threads = 128, .unroll = 8, .blocks_per_sm = 0},
      {.threads = 256, .unroll = 2, .blocks_per_sm = 0},  {.threads = 256, .unroll = 4, .blocks_per_sm = 0},
      {.threads = 512, .unroll = 2, .blocks_per_sm = 0},  {.threads = 512, .unroll = 4, .blocks_per_sm = 0},
  };
}

std::uint64_t plain_read_grid(const PlainReadConfig& config, std::uint64_t bytes, int sm_count) {
  const std::uint64_t tiles = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(
             ceil_div(static_cast<int64_t>(bytes / kVector), int64_t{config.threads} * config.unroll)));
  if (config.blocks_per_sm <= 0) return tiles;
  const auto persistent =
      static_cast<std::uint64_t>(config.blocks_per_sm) * static_cast<std::uint64_t>(std::max(sm_count, 1));
  return std::min(tiles, persistent);
}

std::uint32_t plain_read_fold(std::span<const std::uint8_t> bytes) {
  std::uint32_t acc = 0;
  for (size_t i = 0; i < bytes.size(); ++i) acc ^= static_cast<std::uint32_t>(bytes[i]) << (8 * (i & 3));
  return acc;
}

const std::string& plain_read_source() {
  static const std::string source = build_source();
  return source;
}

PlainRead::PlainRead(const runtime::Device& device)
    : device_(device), module_(load_module(device)), fill_(module_.kernel("plain_read_fill")) {
  for (const PlainReadConfig& c : plain_read_configs())
    kernels_.emplace_back(c, module_.kernel(kernel_name(c)));
}

const runtime::Kernel& PlainRead::kernel(const PlainReadConfig& config) const {
  for (const auto& [c, k] : kernels_)
    if (c.threads == config.threads && c.unroll == config.unroll &&
        (c.blocks_per_sm > 0) == (config.blocks_per_sm > 0))
      return k;
  fail("plain read: no kernel for configuration {}", config.name());
}

void PlainRead::ensure_buffer(const runtime::Stream& stream, std::uint64_t bytes) {
  const std::uint64_t size =
      static_cast<std::uint64_t>(ceil_div(static_cast<int64_t>(bytes), kVector)) * kVector;
  if (buffer_.size() >= size) return;
  buffer_ = runtime::DeviceBuffer();  // free the old one first: the device holds one at a time
  buffer_ = device_.allocate(size);
  const std::uint64_t n16 = size / kVector;
  const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>(ceil_div(n16, 256), 65535));
  fill_.launch({.grid = {blocks}, .block = {256}}, stream, buffer_.device_ptr(), n16,
               std::uint32_t{20261121});
  stream.synchronize();
}

void PlainRead::ensure_out(std::uint64_t words) {
  if (out_.size() >= words * 4) return;
  out_ = runtime::DeviceBuffer();
  out_ = device_.allocate(words * 4);
}

void PlainRead::launch(const runtime::Stream& stream, const PlainReadConfig& config, std::uint64_t data,
                       std::uint64_t bytes, std::uint64_t out) const {
  if (data % kVector != 0) fail("plain read: the data address {:#x} is not 16-byte aligned", data);
  const std::uint64_t grid = plain_read_grid(config, bytes, device_.info().sm_count);
  if (grid > std::numeric_limits<int>::max())
    fail("plain read of {} bytes needs {} blocks with {}: too many", bytes, grid, config.name());
  const std::uint64_t n16 = bytes / kVector;
  const auto tail = static_cast<std::uint32_t>(bytes % kVector);
  kernel(config).launch(
      {.grid = {static_cast<unsigned>(grid)}, .block = {static_cast<unsigned>(config.threads)}}, stream, data,
      n16, tail, out);
}

std::uint32_t PlainRead::fold(const runtime::Stream& stream, const PlainReadConfig& config,
                              std::uint64_t data, std::uint64_t bytes) {
  const std::uint64_t grid = plain_read_grid(config, bytes, device_.info().sm_count);
  ensure_out(grid);
  launch(stream, config, data, bytes, out_.device_ptr());
  std::vector<std::uint32_t> words(grid);
  out_.copy_to_host_async(words.data(), grid * 4, stream);
  stream.synchronize();
  std::uint32_t acc = 0;
  for (std::uint32_t w : words) acc ^= w;
  return acc;
}

PlainReadResult PlainRead::measure(const runtime::Stream& stream, std::uint64_t bytes,
                                   const TimingOptions& timing) {
  if (bytes == 0) fail("plain read: bytes must be positive");
  ensure_buffer(stream, bytes);
  std::uint64_t most_blocks = 1;
  for (const PlainReadConfig& c : plain_read_configs())
    most_blocks = std::max(most_blocks, plain_read_grid(c, bytes, device_.info().sm_count));
  ensure_out(most_blocks);
  PlainReadResult best;
  best.bytes = bytes;
  for (const PlainReadConfig& c : plain_read_configs()) {
    Timing t = time_gpu(
        device_, stream, [&] { launch(stream, c, buffer_.device_ptr(), bytes, out_.device_ptr()); }, timing);
    if (best.config.empty() || t.median_us < best.us) {
      best.us = t.median_us;
      best.config = c.name();
    }
  }
  return best;
}

PlainRead& PlainRead::shared(const runtime::Device& device) {
  // Never destroyed: the readers' device memory is returned at process exit, and destroying them from a
  // static destructor could run after the driver has begun shutting down.
  static std::mutex mutex;
  static auto* readers = new std::map<int, std::unique_ptr<PlainRead>>();
  std::lock_guard lock(mutex);
  std::unique_ptr<PlainRead>& reader = (*readers)[device.info().ordinal];
  if (!reader) reader = std::make_unique<PlainRead>(device);
  return *reader;
}

PlainReadResult measure_plain_read(const runtime::Device& device, const runtime::Stream& stream,
                                   std::uint64_t bytes, const TimingOptions& timing) {
  return PlainRead::shared(device).measure(stream, bytes, timing);
}

double measure_read_bandwidth_gbps(const runtime::Device& device, const runtime::Stream& stream,
                                   const TimingOptions& timing) {
  const std::uint64_t gib = std::uint64_t{1} << 30;
  std::uint64_t bytes = std::min<std::uint64_t>(gib, device.info().total_memory / 8);
  bytes = std::max<std::uint64_t>(bytes / kVector * kVector, kVector);
  return measure_plain_read(device, stream, bytes, timing).gbps();
}

}  // namespace tilevm::bench
