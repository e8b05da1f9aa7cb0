// Targets fitted to a device (target.h): by name, arch and what the driver reports, starting from the H100's
// row of the GPU table (gpu_table.cpp).
#include "tilevm/target/target.h"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "tilevm/support/error.h"

namespace tilevm::target {

namespace {

bool contains(const std::string& text, const char* word) {
  return text.find(word) != std::string::npos;
}

// Tensor-core TFLOP/s per SM that mma.sync (f16 in, f32 accumulate) realistically reaches: ~60% of the
// dense peak on Hopper (wgmma is what reaches the rest), ~80% on Ampere (A100: 312 peak, 108 SMs).
double mma_tflops_per_sm(const ArchFeatures& f) {
  return f.hopper ? 474.0 / 132 : 250.0 / 108;
}

// cuBLAS's large f16 GEMM per SM: 722 TFLOP/s measured on the H100 (wgmma), ~280 on the A100 (90% of 312).
double gemm_tflops_per_sm(const ArchFeatures& f) {
  return f.hopper ? 722.0 / 132 : 280.0 / 108;
}

// The architectures NVRTC 12-13 compile for, from sm_80 (an unknown one, sm_95, would take the H100's figures
// here and fail later inside NVRTC with less to say). The arch-specific "a" form exists from sm_90.
constexpr int kKnownCapabilities[] = {80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121};

int compute_capability_of(const std::string& arch) {
  static const std::regex re(R"(sm_(\d{2,3})(a?))");
  std::smatch m;
  if (!std::regex_match(arch, m, re))
    fail("'{}' is not a CUDA architecture (expected e.g. sm_80 or sm_90a)", arch);
  const int cc = std::stoi(m[1].str());
  if (cc < 80) return cc;  // features_of says what is supported
  bool known = false;
  std::string names;
  for (int k : kKnownCapabilities) {
    known = known || k == cc;
    names += fmt::format("{}sm_{}", names.empty() ? "" : ", ", k);
  }
  if (!known) fail("'{}' is not a CUDA architecture tilevm knows (known: {})", arch, names);
  if (!m[2].str().empty() && cc < 90)
    fail("'{}': the arch-specific 'a' form exists from sm_90 (sm_90a); use sm_{}", arch, cc);
  return cc;
}

}  // namespace

ArchFeatures Target::features_of(const std::string& arch) {
  const int cc = compute_capability_of(arch);
  if (cc < 80) fail("{} is not supported: tilevm needs sm_80 or newer", arch);
  ArchFeatures f;
  f.cp_async = f.ldmatrix = f.mma_sync = true;
  f.bf16x2_add = f.hopper = cc >= 90;
  // wgmma and setmaxnreg exist only in the arch-specific Hopper target (sm_100a has tcgen05 instead).
  f.wgmma = cc == 90 && arch.back() == 'a';
  return f;
}

Target Target::h100_like(int sm_count) {
  Target t = h100_sxm();
  if (sm_count == t.sm_count) return t;
  const double scale = static_cast<double>(std::max(sm_count, 1)) / t.sm_count;
  t.name = fmt::format("H100-like, {} SMs", std::max(sm_count, 1));
  t.dram_gbps *= scale;
  t.l2_gbps *= scale;
  t.mma_tflops *= scale;
  t.gemm_tflops *= scale;
  t.fma_tflops *= scale;
  t.sm_count = std::max(sm_count, 1);
  return t;
}

Target Target::from_properties(const DeviceProperties& d) {
  Target t = h100_like(d.sm_count > 0 ? d.sm_count : 132);
  if (!d.name.empty()) t.name = d.name;
  if (!d.arch.empty()) {
    t.arch = d.arch;
    t.compute_capability = compute_capability_of(d.arch);
    t.features = features_of(d.arch);
  }
  t.mma_tflops = mma_tflops_per_sm(t.features) * t.sm_count;
  t.gemm_tflops = gemm_tflops_per_sm(t.features) * t.sm_count;
  const std::string& name = d.name;
  const double sms = t.sm_count;
  // Read bandwidths of a large stream, measured or ~88% of the data sheet where not measured here.
  if (contains(name, "H200")) {
    t.dram_gbps = 4300;
    t.l2_gbps = 11000;
    // The same SMs sustain more on the H200 (gpu_table.cpp's row says what was measured).
    t.mma_tflops = 529 * sms / 132;
    t.gemm_tflops = 760 * sms / 132;
  } else if (contains(name, "H100") && contains(name, "PCIe")) {
    t.dram_gbps = 1800;
  } else if (contains(name, "H100") && contains(name, "NVL")) {
    t.dram_gbps = 3400;
  } else if (contains(name, "H100")) {
    t.dram_gbps = 3160;
    t.l2_gbps = 10000;
  } else if (contains(name, "A100")) {
    t.dram_gbps = d.total_memory > (std::size_t{60} << 30) ? 1800 : 1370;
    t.l2_gbps = 5000 * sms / 108;
    t.fma_tflops = 19.5 * sms / 108;
  } else if (contains(name, "L40S")) {
    t.dram_gbps = 760;
    t.mma_tflops = 217;  // 362 dense f16 with f32 accumulation, 60%
    t.gemm_tflops = 300;
    t.fma_tflops = 91;
  } else if (contains(name, "4090")) {
    t.dram_gbps = 890;
    t.mma_tflops = 115;  // 165 dense f16 with f32 accumulation, 70%
    t.gemm_tflops = 150;
    t.fma_tflops = 82;
  }
  // Consumer Ampere and Ada keep 1536 threads and 16 (sm_86) or 24 (sm_89) blocks per SM.
  if (t.arch == "sm_86" || t.arch == "sm_89") {
    t.max_threads_per_sm = 1536;
    t.max_blocks_per_sm = t.arch == "sm_86" ? 16 : 24;
  }
  t.sm_dram_gbps = 3 * t.dram_gbps / t.sm_count;
  if (d.max_threads_per_block > 0) t.max_threads_per_block = d.max_threads_per_block;
  if (d.max_shared_per_block_optin > 0) t.shared_per_block = d.max_shared_per_block_optin;
  if (d.max_shared_per_sm > 0) t.shared_per_sm = d.max_shared_per_sm;
  if (d.l2_cache_bytes > 0) t.l2_cache_bytes = d.l2_cache_bytes;
  return t;
}

Target Target::for_arch(const std::string& arch) {
  const ArchFeatures features = features_of(arch);
  const int cc = compute_capability_of(arch);
  Target t;
  if (cc == 80) return generic_sm80();
  if (cc < 90) {
    // Consumer Ampere and Ada: 99 KB of shared memory per block (100 KB per SM), and from_properties's
    // thread and block limits for their arch.
    t = from_properties({.name = "NVIDIA A100-SXM4-80GB",
                         .arch = arch,
                         .sm_count = 108,
                         .max_threads_per_block = 1024,
                         .max_shared_per_block_optin = 99 * 1024,
                         .max_shared_per_sm = 100 * 1024});
  } else {
    t = h100_sxm();
    t.arch = arch;
    t.compute_capability = cc;
    t.features = features;
  }
  t.name = fmt::format("{} (figures of {})", arch, cc < 90 ? "an A100" : "the H100 SXM");
  if (arch == "sm_90a") t.name = "H100 SXM";
  return t;
}

int64_t Target::resident_blocks(int64_t threads, int64_t registers, int64_t shared_bytes) const {
  threads = std::max<int64_t>(threads, 1);
  const int64_t regs = (std::max<int64_t>(registers, 1) + 7) / 8 * 8;
  int64_t n = max_blocks_per_sm;
  n = std::min<int64_t>(n, max_threads_per_sm / threads);
  n = std::min(n, registers_per_sm / (regs * threads));
  const int64_t shared = std::max<int64_t>(shared_bytes, 0) + shared_reserved_per_block;
  if (shared > 0) n = std::min(n, shared_per_sm / shared);  // a target without a reserve, and no shared use
  return n;
}

}  // namespace tilevm::target
