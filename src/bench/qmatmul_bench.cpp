// The GPU side of the quantized-matmul benchmark (qmatmul_bench.h): random inputs, the timed runs and the two
// baselines measured in the same process.
#include "tilevm/bench/qmatmul_bench.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include "tilevm/bench/plain_read.h"
#include "tilevm/runtime/cublas.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::bench {
namespace {

// splitmix64: fast, and good enough for benchmark inputs.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // An index below `size` (< 2^32) by multiply-shift: no division in loops over hundreds of millions.
  std::size_t below(std::size_t size) { return static_cast<std::size_t>(((next() >> 32) * size) >> 32); }

 private:
  std::uint64_t state_;
};

// Elements are generated and uploaded this many at a time, which bounds the host memory used.
constexpr std::int64_t kChunk = std::int64_t{1} << 24;

// Uploads `count` 16-bit codes, pool[random index] each: a pool of a few thousand random values encoded
// once keeps generating hundreds of millions of elements fast.
void upload_from_pool(runtime::DeviceBuffer& buffer, std::int64_t count,
                      const std::vector<std::uint16_t>& pool, Random& random) {
  std::vector<std::uint16_t> chunk;
  for (std::int64_t start = 0; start < count; start += kChunk) {
    const std::int64_t size = std::min(kChunk, count - start);
    chunk.resize(static_cast<std::size_t>(size));
    for (std::uint16_t& v : chunk) v = pool[random.below(pool.size())];
    buffer.copy_from_host(chunk.data(), chunk.size() * 2, static_cast<std::size_t>(start) * 2);
  }
}

// `size` codes of `type` (f16 or bf16) made by `value()`.
std::vector<std::uint16_t> pool_of(DataType type, std::size_t size, const std::function<double()>& value) {
  std::vector<std::uint16_t> pool(size);
  for (std::uint16_t& v : pool) v = static_cast<std::uint16_t>(encode(type, value()));
  return pool;
}

// Roughly normal values (a sum of four uniforms, unit variance), never exactly zero.
double normalish(Random& random) {
  double sum = 0;
  for (int i = 0; i < 4; ++i) sum += random.uniform();
  const double v = (sum - 2.0) * std::sqrt(3.0);
  return v == 0 ? 0.5 : v;
}

// The codes of `type` that are numbers (no NaN or infinity), and the largest magnitude among them.
std::vector<std::uint64_t> finite_codes(DataType type, double* largest) {
  std::vector<std::uint64_t> codes;
  *largest = 0;
  for (std::uint64_t c = 0; c <= type.code_mask(); ++c) {
    if (is_nan_code(type, c) || is_inf_code(type, c)) continue;
    codes.push_back(c);
    *largest = std::max(*largest, std::abs(decode(type, c)));
  }
  if (*largest == 0) *largest = 1;
  return codes;
}

// Uploads the packed codes of `count` random weights of `type`: random bytes when every code is a number,
// otherwise codes drawn from the finite ones (so no NaN or infinity reaches the kernel).
void upload_codes(runtime::DeviceBuffer& buffer, DataType type, std::int64_t count,
                  const std::vector<std::uint64_t>& finite, Random& random) {
  const int bits = type.bits();
  const bool all_finite = finite.size() == type.code_mask() + 1;
  std::vector<std::uint8_t> bytes;
  std::vector<std::uint64_t> codes;
  // kChunk is a multiple of 8, so every chunk starts on a byte: element `first` is at byte first / 8 * bits.
  for (std::int64_t first = 0; first < count; first += kChunk) {
    const std::int64_t n = std::min(kChunk, count - first);
    bytes.resize(static_cast<std::size_t>(packed_bytes(bits, n)));
    if (all_finite) {
      for (std::size_t i = 0; i < bytes.size(); i += 8) {
        const std::uint64_t word = random.next();
        std::memcpy(bytes.data() + i, &word, std::min<std::size_t>(8, bytes.size() - i));
      }
    } else {
      codes.resize(static_cast<std::size_t>(n));
      for (std::uint64_t& c : codes) c = finite[random.below(finite.size())];
      pack(bits, codes, bytes);
    }
    buffer.copy_from_host(bytes.data(), bytes.size(), static_cast<std::size_t>(first / 8 * bits));
  }
}

// cuBLAS on [m, k] x [k, n] dense random weights of ATYPE, reusing `a` and `c`; sets the cuBLAS fields of r.
void bench_cublas(const runtime::Device& device, const runtime::Stream& stream, const ops::QMatmulProblem& p,
                  std::uint64_t a, std::uint64_t c, const std::vector<std::uint16_t>& pool, Random& random,
                  const TimingOptions& timing, QMatmulBenchResult& r) {
  std::string why;
  if (!runtime::Cublas::library_available(&why)) {
    r.cublas_note = why;
    return;
  }
  runtime::Cublas blas = runtime::Cublas::open(device);
  runtime::DeviceBuffer w = device.allocate(static_cast<std::size_t>(p.k * p.n * 2));
  upload_from_pool(w, p.k * p.n, pool, random);
  blas.gemm(stream, p.atype, p.m, p.n, p.k, a, w.device_ptr(), c);  // fails here, untimed, if cuBLAS cannot
  stream.synchronize();
  Timing t = time_gpu(
      device, stream, [&] { blas.gemm(stream, p.atype, p.m, p.n, p.k, a, w.device_ptr(), c); }, timing);
  r.cublas_us = t.median_us;
  r.speedup_vs_cublas = t.median_us / r.latency_us;
  r.cublas_tflops = qmatmul_flops(p) / t.median_us * 1e-6;
}

}  // namespace

double tensor_ceiling_tflops(const runtime::Device& device, DataType atype, const TimingOptions& timing) {
  static std::mutex mutex;
  static std::map<std::pair<int, std::string>, double> measured;
  std::lock_guard lock(mutex);
  double& rate = measured[{device.info().ordinal, atype.name()}];
  if (rate > 0) return rate;
  std::string why;
  if (!runtime::Cublas::library_available(&why)) fail("no cuBLAS for the tensor rate: {}", why);
  const int64_t s = 8192;
  runtime::Cublas blas = runtime::Cublas::open(device);
  runtime::Stream stream = device.create_stream();
  Random random(0x7e5);
  const std::vector<std::uint16_t> pool = pool_of(atype, 4096, [&] { return normalish(random); });
  runtime::DeviceBuffer a = device.allocate(static_cast<std::size_t>(s * s * 2));
  runtime::DeviceBuffer w = device.allocate(static_cast<std::size_t>(s * s * 2));
  runtime::DeviceBuffer c = device.allocate(static_cast<std::size_t>(s * s * 2));
  upload_from_pool(a, s * s, pool, random);
  upload_from_pool(w, s * s, pool, random);
  blas.gemm(stream, atype, s, s, s, a.device_ptr(), w.device_ptr(), c.device_ptr());
  stream.synchronize();
  const Timing t = time_gpu(
      device, stream,
      [&] { blas.gemm(stream, atype, s, s, s, a.device_ptr(), w.device_ptr(), c.device_ptr()); }, timing);
  rate = 2.0 * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(s) / t.median_us * 1e-6;
  return rate;
}

double read_ceiling_gbps(const runtime::Device& device, const TimingOptions& timing) {
  static std::mutex mutex;
  static std::map<int, double> measured;
  std::lock_guard lock(mutex);
  auto [it, inserted] = measured.try_emplace(device.info().ordinal, 0.0);
  if (inserted || it->second <= 0)
    it->second = measure_read_bandwidth_gbps(device, device.create_stream(), timing);
  return it->second;
}

QMatmulBenchResult bench_qmatmul(const runtime::Device& device, const ops::QMatmulGpu& q,
                                 const QMatmulBenchOptions& options) {
  const ops::QMatmulProblem& p = q.problem();
  ops::check_problem(p);
  QMatmulBenchResult r;
  r.problem = p;
  r.config = q.config();
  r.device = device.info().name;
  r.bytes = qmatmul_min_bytes(p);
  runtime::Stream stream = device.create_stream();
  Random random(0x7117e3 ^ static_cast<std::uint64_t>(p.m * 1000003 + p.n * 1009 + p.k));

  // Values: A roughly normal; weights |w| <= 0.075 (scales of about 0.05 / the largest code magnitude), so
  // that the f32 sums stay far inside ATYPE's range for every weight type.
  double largest = 1;
  const std::vector<std::uint64_t> finite = finite_codes(p.wtype, &largest);
  const std::vector<std::uint16_t> a_pool = pool_of(p.atype, 4096, [&] { return normalish(random); });
  // A scale too small for ATYPE (the widest-range floats) becomes its smallest subnormal (code 1), not zero.
  std::vector<std::uint16_t> scale_pool =
      pool_of(p.atype, 4096, [&] { return (0.5 + random.uniform()) * 0.05 / largest; });
  for (std::uint16_t& s : scale_pool) s = std::max<std::uint16_t>(s, 1);
  const std::int64_t groups = p.k / p.group;

  runtime::DeviceBuffer a = device.allocate(static_cast<std::size_t>(p.m * p.k * 2));
  runtime::DeviceBuffer c = device.allocate(static_cast<std::size_t>(p.m * p.n * 2));
  runtime::DeviceBuffer scales = device.allocate(static_cast<std::size_t>(groups * p.n * 2));
  runtime::DeviceBuffer zeros;
  runtime::DeviceBuffer transformed = device.allocate(static_cast<std::size_t>(q.transformed_bytes()));
  runtime::DeviceBuffer workspace;
  if (q.workspace_bytes() > 0) workspace = device.allocate(static_cast<std::size_t>(q.workspace_bytes()));
  runtime::DeviceBuffer counters;
  if (q.counter_bytes() > 0) {
    counters = device.allocate(static_cast<std::size_t>(q.counter_bytes()));
    counters.fill_bytes(0);  // the split-K ticket counters: 0 once, and every run leaves them 0
  }
  upload_from_pool(a, p.m * p.k, a_pool, random);
  upload_from_pool(scales, groups * p.n, scale_pool, random);
  if (p.zero_point) {
    std::vector<std::uint16_t> zero_pool;
    for (std::uint64_t z = 0; z <= p.wtype.code_mask(); ++z)
      zero_pool.push_back(static_cast<std::uint16_t>(encode(p.atype, static_cast<double>(z))));
    zeros = device.allocate(static_cast<std::size_t>(groups * p.n * 2));
    upload_from_pool(zeros, groups * p.n, zero_pool, random);
  }
  {
    // The packed codes are only needed until the transform has run.
    runtime::DeviceBuffer codes = device.allocate(static_cast<std::size_t>(ops::qmatmul_codes_bytes(p)));
    upload_codes(codes, p.wtype, p.k * p.n, finite, random);
    q.transform(stream, codes.device_ptr(), transformed.device_ptr());
    stream.synchronize();
  }

  ops::QMatmulBuffers buffers{.a = a.device_ptr(),
                              .transformed = transformed.device_ptr(),
                              .scales = scales.device_ptr(),
                              .zeros = zeros.device_ptr(),
                              .c = c.device_ptr(),
                              .workspace = workspace.device_ptr(),
                              .counters = counters.device_ptr()};
  q.run(stream, buffers);  // a launch failure shows here, outside the timing
  stream.synchronize();
  Timing t = time_gpu(
      device, stream, [&] { q.run(stream, buffers); }, options.timing);
  r.latency_us = t.median_us;
  r.gbps = r.bytes / r.latency_us * 1e-3;
  r.tflops = qmatmul_flops(p) / r.latency_us * 1e-6;

  r.ceiling_gbps = read_ceiling_gbps(device, options.timing);
  r.floor_fraction = r.ceiling_gbps > 0 ? (r.bytes / r.ceiling_gbps * 1e-3) / r.latency_us : 0;

  if (options.with_plain_read) {
    // The reader's buffer is the ceiling's (1 GiB), so it grows here only for the largest prefill shapes.
    PlainReadResult read =
        measure_plain_read(device, stream, static_cast<std::uint64_t>(std::ceil(r.bytes)), options.timing);
    r.plain_read_us = read.us;
    r.plain_read_config = read.config;
    r.read_ratio = read.us > 0 ? r.latency_us / read.us : 0;
  }

  if (options.with_cublas) {
    transformed = runtime::DeviceBuffer();  // make room for the dense weight
    workspace = runtime::DeviceBuffer();
    try {
      bench_cublas(device, stream, p, a.device_ptr(), c.device_ptr(), a_pool, random, options.timing, r);
      a = runtime::DeviceBuffer();  // the tensor rate's GEMM takes its own 384 MB
      c = runtime::DeviceBuffer();
      set_roofline(r, tensor_ceiling_tflops(device, p.atype, options.timing));
    } catch (const Error& e) {
      // A cuBLAS that loads but cannot run here is reported, not fatal: the matmul's figures stand.
      r.cublas_us.reset();
      r.speedup_vs_cublas.reset();
      r.cublas_tflops.reset();
      r.cublas_note = e.what();
    }
  } else {
    r.cublas_note = "not measured";
  }
  return r;
}

}  // namespace tilevm::bench
