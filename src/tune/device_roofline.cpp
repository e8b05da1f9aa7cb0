// DeviceRoofline::for_device: the H100 figures, or a known device's, scaled by what the driver reports.
#include <algorithm>
#include <string>

#include "tilevm/tune/cost_model.h"

namespace tilevm::tune {

namespace {

bool contains(const std::string& text, const char* word) { return text.find(word) != std::string::npos; }

// Tensor-core TFLOP/s per SM that mma.sync (f16 in, f32 accumulate) realistically reaches: ~60% of the
// dense peak on Hopper (wgmma is what reaches the rest), ~80% on Ampere (A100: 312 peak, 108 SMs).
bool hopper_or_newer(const std::string& arch) { return arch.rfind("sm_9", 0) == 0 || arch.rfind("sm_1", 0) == 0; }

double mma_tflops_per_sm(const std::string& arch) { return hopper_or_newer(arch) ? 474.0 / 132 : 250.0 / 108; }

// cuBLAS's large f16 GEMM per SM: 722 TFLOP/s measured on the H100 (wgmma), ~280 on the A100 (90% of 312).
double gemm_tflops_per_sm(const std::string& arch) { return hopper_or_newer(arch) ? 722.0 / 132 : 280.0 / 108; }

}  // namespace

DeviceRoofline DeviceRoofline::h100_like(int sm_count) {
  DeviceRoofline r;
  const double scale = static_cast<double>(std::max(sm_count, 1)) / r.sm_count;
  r.dram_gbps *= scale;
  r.l2_gbps *= scale;
  r.mma_tflops *= scale;
  r.gemm_tflops *= scale;
  r.fma_tflops *= scale;
  r.sm_count = std::max(sm_count, 1);
  return r;
}

DeviceRoofline DeviceRoofline::for_device(const runtime::DeviceInfo& info) {
  DeviceRoofline r = h100_like(info.sm_count > 0 ? info.sm_count : 132);
  r.mma_tflops = mma_tflops_per_sm(info.arch) * r.sm_count;
  r.gemm_tflops = gemm_tflops_per_sm(info.arch) * r.sm_count;
  const std::string& name = info.name;
  const double sms = r.sm_count;
  // Read bandwidths of a large stream, measured or ~88% of the data sheet where not measured here.
  if (contains(name, "H200")) {
    r.dram_gbps = 4300;
    r.l2_gbps = 11000;
  } else if (contains(name, "H100") && contains(name, "PCIe")) {
    r.dram_gbps = 1800;
  } else if (contains(name, "H100") && contains(name, "NVL")) {
    r.dram_gbps = 3400;
  } else if (contains(name, "H100")) {
    r.dram_gbps = 3160;
    r.l2_gbps = 10000;
  } else if (contains(name, "A100")) {
    r.dram_gbps = info.total_memory > (std::size_t{60} << 30) ? 1800 : 1370;
    r.l2_gbps = 5000 * sms / 108;
    r.fma_tflops = 19.5 * sms / 108;
  } else if (contains(name, "L40S")) {
    r.dram_gbps = 760;
    r.mma_tflops = 217;  // 362 dense f16 with f32 accumulation, 60%
    r.gemm_tflops = 300;
    r.fma_tflops = 91;
  } else if (contains(name, "4090")) {
    r.dram_gbps = 890;
    r.mma_tflops = 115;  // 165 dense f16 with f32 accumulation, 70%
    r.gemm_tflops = 150;
    r.fma_tflops = 82;
  }
  // Consumer Ampere and Ada keep 1536 threads and 16 (sm_86) or 24 (sm_89) blocks per SM.
  if (info.arch == "sm_86" || info.arch == "sm_89") {
    r.max_threads_per_sm = 1536;
    r.max_blocks_per_sm = info.arch == "sm_86" ? 16 : 24;
  }
  r.sm_dram_gbps = 3 * r.dram_gbps / r.sm_count;
  if (info.max_shared_per_sm > 0) r.shared_per_sm = info.max_shared_per_sm;
  if (info.l2_cache_bytes > 0) r.l2_cache_bytes = info.l2_cache_bytes;
  return r;
}

}  // namespace tilevm::tune
