// A device's target (device_target.h).
#include "tilevm/exec/device_target.h"

namespace tilevm::exec {

target::Target device_target(const runtime::DeviceInfo& info, const std::string& arch) {
  target::Target t =
      target::Target::from_properties({.name = info.name,
                                       .arch = info.arch,
                                       .sm_count = info.sm_count,
                                       .max_threads_per_block = info.max_threads_per_block,
                                       .max_shared_per_block_optin = info.max_shared_per_block_optin,
                                       .max_shared_per_sm = info.max_shared_per_sm,
                                       .l2_cache_bytes = info.l2_cache_bytes,
                                       .total_memory = info.total_memory});
  if (!arch.empty()) {
    const target::Target named = target::Target::for_arch(arch);
    t.arch = named.arch;
    t.compute_capability = named.compute_capability;
    t.features = named.features;
  }
  return t;
}

}  // namespace tilevm::exec
