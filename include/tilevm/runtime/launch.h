// Launch configurations and their checks, independent of any device so that they can be tested without one.
#pragma once

#include <cstddef>
#include <string_view>

namespace tilevm::runtime {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  unsigned long long count() const { return static_cast<unsigned long long>(x) * y * z; }
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  std::size_t dynamic_shared_bytes = 0;
};

// What one kernel on one device allows.
struct LaunchLimits {
  int max_threads_per_block = 1024;     // the kernel's (cuFuncGetAttribute), at most the device's
  std::size_t static_shared_bytes = 0;  // the kernel's __shared__ arrays
  std::size_t max_shared_optin = 0;     // the device's opt-in limit per block (static + dynamic)
};

// @throws tilevm::Error naming the kernel when `config` cannot be launched within `limits`, e.g.
//   "kernel 'matmul' asks for 300000 bytes of dynamic shared memory (plus 0 static) but the device allows
//    232448 per block"
//   "kernel 'matmul' cannot run with 2048 threads per block: at most 1024"
//   "kernel 'matmul' has an empty grid (0, 1, 1)"
void check_launch_config(const LaunchConfig& config, const LaunchLimits& limits, std::string_view kernel);

// Whether the kernel must raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to launch with `config`:
// true when it asks for more than 48 KB of dynamic shared memory, the default limit.
inline bool needs_shared_opt_in(const LaunchConfig& config) {
  return config.dynamic_shared_bytes > 48 * 1024;
}

}  // namespace tilevm::runtime
