// Limits that no supported GPU exceeds (sm_80 and later): what the verifier and the interpreter check before
// any target is chosen, so that `tilevm check` refuses what no GPU can launch. The code generator checks the
// chosen target's own numbers (target::Target, possibly smaller: check_target_limits in
// src/codegen/cuda/kernel_emitter.cpp).
#pragma once

#include <cstdint>

namespace tilevm::target {

inline constexpr int64_t kMaxThreadsPerBlock = 1024;
inline constexpr int64_t kMaxSharedPerBlock = 227 * 1024;  // sm_90's opt-in maximum, the largest
inline constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxGridYZ = 65535;

}  // namespace tilevm::target
