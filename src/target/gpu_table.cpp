// The GPU table: the figures of each GPU the project describes, one row per GPU with its sources, and the
// named targets built from it (target.h: h100_sxm, h200, generic_sm80, l40s, by_name).
//
// Two kinds of figure sit in a row. Limits (SMs, shared memory, threads, registers, L2 size) are the data
// sheet's and the CUDA Programming Guide's ("Compute capabilities", table "Technical specifications per
// compute capability"). Rates are what kernels sustain, not the peaks: measured on this project's H100
// (docs/performance.md, /work/shared/PERFORMANCE.md), elsewhere a stated fraction of the data sheet's peak,
// because the cost models rank configurations by them and a peak no kernel reaches would favour the wrong
// resource.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tilevm/support/error.h"
#include "tilevm/target/target.h"

namespace tilevm::target {

namespace {

struct GpuRow {
  const char* key;   // the short name of Target::by_name
  const char* name;  // Target::name
  const char* arch;
  int sm_count;
  int max_threads_per_sm;
  int max_blocks_per_sm;
  int shared_per_block_kib;  // what a kernel may opt in to
  int shared_per_sm_kib;
  int l2_mib;
  int registers_per_sm;  // 32-bit registers
  int max_registers_per_thread;
  double dram_gbps;     // a large stream's read bandwidth
  double l2_gbps;       // L2 -> SMs
  double mma_tflops;    // f16 mma.sync with f32 accumulation, as kernels reach it
  double gemm_tflops;   // a large f16 GEMM (cuBLAS; wgmma on Hopper)
  double fma_tflops;    // f32 FMA, 2 flops each
  double sm_dram_gbps;  // what one SM alone pulls from DRAM; 0: 3 x its share of dram_gbps
  double clock_ghz;     // boost clock
};

// Every row: at most 1024 threads per block, 64 K 32-bit registers per SM and 255 per thread (CUDA
// Programming Guide, compute capabilities 8.0 to 9.0), stated per row all the same.
constexpr GpuRow kGpus[] = {
    // A100 SXM4 80 GB (sm_80). NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020) and the A100 data
    // sheet: 108 SMs at 1410 MHz boost, 164 KB shared memory per SM (163 KB per block), 40 MB L2, HBM2e
    // 2039 GB/s, f16 tensor cores 312 TFLOP/s dense (f32 accumulation at the same rate), f32 19.5 TFLOP/s.
    // Rates: 1800 GB/s (88% of the sheet), mma.sync ~80% and cuBLAS ~90% of 312, L2 an estimate.
    {"a100", "generic sm_80 (A100 SXM)", "sm_80", 108, 2048, 32, 163, 164, 40, 65536, 255, 1800, 5000, 250,
     280, 19.5, 0, 1.41},
    // H100 SXM5 80 GB (sm_90a). NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022) and the H100 data
    // sheet: 132 SMs at 1980 MHz boost, 228 KB shared memory per SM (227 KB per block), 50 MB L2, HBM3
    // 3350 GB/s, f16 tensor cores 989 TFLOP/s dense with f32 accumulation, f32 67 TFLOP/s.
    // Rates measured here (docs/performance.md): a read stream 3160 GB/s, cuBLAS f16 GEMM 722 TFLOP/s;
    // mma.sync reaches ~60% of the dense peak (wgmma the rest); L2 an estimate.
    {"h100", "H100 SXM", "sm_90a", 132, 2048, 32, 227, 228, 50, 65536, 255, 3160, 10000, 474, 722, 60, 72,
     1.98},
    // H200 SXM 141 GB (sm_90a). H200 data sheet: the H100 SXM's GH100 with HBM3e at 4800 GB/s; the same SMs,
    // shared memory, L2 and tensor-core peaks. Measured here: a read stream 4300 GB/s (about 1.4 x the H100);
    // the tensor cores sustain more than on the H100 (the clock holds higher under load): cuBLAS f16 750-780
    // TFLOP/s on the large GEMMs, register-A wgmma 661 at 128 rows where the H100 gave 545-672
    // (docs/performance.md, twentieth and twenty-first sessions): mma_tflops and gemm_tflops scaled to that.
    {"h200", "H200", "sm_90a", 132, 2048, 32, 227, 228, 50, 65536, 255, 4300, 11000, 529, 760, 60, 0, 1.98},
    // L40S (AD102, sm_89). L40S data sheet (2023): 142 SMs (18176 CUDA cores, 128 per SM) at 2520 MHz boost,
    // 48 MB L2, GDDR6 864 GB/s, f16 tensor cores 362 TFLOP/s dense with f32 accumulation, f32 91.6
    // TFLOP/s. Compute capability 8.9 (CUDA Programming Guide): 100 KB shared memory per SM (99 KB per
    // block), 1536 threads and 24 blocks per SM. No TMA, no wgmma: cp.async and mma.sync.
    // Rates: 760 GB/s (88% of the sheet), mma.sync 60% and cuBLAS ~83% of 362; L2 a guess (no published
    // figure): measure before trusting an L2-bound ranking on it.
    {"l40s", "L40S", "sm_89", 142, 1536, 24, 99, 100, 48, 65536, 255, 760, 5000, 217, 300, 91, 0, 2.52},
};

const GpuRow& row(const std::string& key) {
  for (const GpuRow& r : kGpus)
    if (key == r.key) return r;
  fail("unknown target '{}' (one of: {})", key, fmt::join(Target::known_names(), ", "));
}

Target from_row(const GpuRow& r) {
  Target t;
  t.name = r.name;
  t.arch = r.arch;
  t.features = Target::features_of(t.arch);
  t.compute_capability = std::stoi(t.arch.substr(3, 2));
  t.sm_count = r.sm_count;
  t.max_threads_per_block = 1024;
  t.max_threads_per_sm = r.max_threads_per_sm;
  t.max_blocks_per_sm = r.max_blocks_per_sm;
  t.shared_per_block = int64_t{r.shared_per_block_kib} * 1024;
  t.shared_per_sm = int64_t{r.shared_per_sm_kib} * 1024;
  t.registers_per_sm = r.registers_per_sm;
  t.max_registers_per_thread = r.max_registers_per_thread;
  t.l2_cache_bytes = int64_t{r.l2_mib} * 1024 * 1024;
  t.dram_gbps = r.dram_gbps;
  t.l2_gbps = r.l2_gbps;
  t.mma_tflops = r.mma_tflops;
  t.gemm_tflops = r.gemm_tflops;
  t.fma_tflops = r.fma_tflops;
  t.sm_dram_gbps = r.sm_dram_gbps > 0 ? r.sm_dram_gbps : 3 * r.dram_gbps / r.sm_count;
  t.clock_ghz = r.clock_ghz;
  t.dram_latency_ns = 700;
  t.launch_us = 2.5;
  return t;
}

}  // namespace

Target Target::h100_sxm() {
  return from_row(row("h100"));
}

Target Target::h200() {
  return from_row(row("h200"));
}

Target Target::generic_sm80() {
  return from_row(row("a100"));
}

Target Target::l40s() {
  return from_row(row("l40s"));
}

const std::vector<std::string>& Target::known_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const GpuRow& r : kGpus) v.emplace_back(r.key);
    return v;
  }();
  return names;
}

Target Target::by_name(const std::string& name) {
  std::string key = name;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  return from_row(row(key));
}

}  // namespace tilevm::target
