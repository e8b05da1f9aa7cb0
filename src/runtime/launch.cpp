#include "tilevm/runtime/launch.h"

#include "tilevm/support/error.h"

namespace tilevm::runtime {

void check_launch_config(const LaunchConfig& config, const LaunchLimits& limits, std::string_view kernel) {
  const Dim3& g = config.grid;
  const Dim3& b = config.block;
  if (g.count() == 0) fail("kernel '{}' has an empty grid ({}, {}, {})", kernel, g.x, g.y, g.z);
  if (b.count() == 0) fail("kernel '{}' has an empty block ({}, {}, {})", kernel, b.x, b.y, b.z);
  if (g.x > 2147483647u || g.y > 65535u || g.z > 65535u)
    fail("kernel '{}' has a grid ({}, {}, {}) beyond CUDA's limits (2147483647, 65535, 65535)", kernel, g.x,
         g.y, g.z);
  if (b.x > 1024u || b.y > 1024u || b.z > 64u)
    fail("kernel '{}' has a block ({}, {}, {}) beyond CUDA's limits (1024, 1024, 64)", kernel, b.x, b.y, b.z);
  if (b.count() > static_cast<unsigned long long>(limits.max_threads_per_block))
    fail("kernel '{}' cannot run with {} threads per block: at most {}", kernel, b.count(),
         limits.max_threads_per_block);
  if (limits.max_shared_optin > 0 &&
      (config.dynamic_shared_bytes > limits.max_shared_optin ||
       limits.static_shared_bytes > limits.max_shared_optin - config.dynamic_shared_bytes))
    fail(
        "kernel '{}' asks for {} bytes of dynamic shared memory (plus {} static) but the device allows {} "
        "per block",
        kernel, config.dynamic_shared_bytes, limits.static_shared_bytes, limits.max_shared_optin);
}

}  // namespace tilevm::runtime
