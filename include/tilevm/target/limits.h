// Limits that no supported GPU exceeds (sm_80 and later): what the verifier and the interpreter check before
// any target is chosen, so that `tilevm check` refuses what no GPU can launch. The code generator checks the
// chosen target's own numbers (target::Target, possibly smaller: check_target_limits in
// src/codegen/cuda/kernel_emitter.cpp).
#pragma once

#include <cstdint>

namespace tilevm::target {

inline constexpr int64_t kMaxThreadsPerBlock = 1024;
// The blocks of a thread-block cluster that every sm_90 GPU launches (more needs
// cudaFuncAttributeNonPortableClusterSizeAllowed, which the runtime does not set).
inline constexpr int64_t kMaxClusterBlocks = 8;
inline constexpr int64_t kMaxSharedPerBlock = 227 * 1024;  // sm_90's opt-in maximum, the largest
// Whether `elements` of `bits` each fit in a block's shared memory. The checks that tabulate a shared
// layout element by element ask first: a tensor past this was refused where it was allocated.
constexpr bool fits_shared(int64_t elements, int bits) {
  return bits > 0 && elements <= kMaxSharedPerBlock * 8 / bits;
}
inline constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxGridYZ = 65535;

// Registers (sm_90, the only target of warp-specialized regions). A block launched alone on its SM
// (`__launch_bounds__(T, 1)`) may hold the SM's whole register file; setmaxnreg moves registers between its
// warpgroups in multiples of 8 per thread, from 24 to 256.
inline constexpr int64_t kRegistersPerSm = 65536;
inline constexpr int64_t kMinSetMaxNReg = 24;
inline constexpr int64_t kMaxSetMaxNReg = 256;
// The register file's bits: no tile held in a block's registers (a fragment, a tile the tile layer moves
// through registers) can be larger, whatever its layout.
inline constexpr int64_t kRegisterFileBits = kRegistersPerSm * 32;
// The per-thread registers a kernel of T threads starts with under `__launch_bounds__(T, 1)` when it uses
// setmaxnreg (the compiler allocates the cap, so the regions' .inc and .dec start from it): the register
// file shared evenly, rounded down to a multiple of 8, at most 256.
constexpr int64_t entry_registers(int64_t threads) {
  const int64_t even = threads > 0 ? kRegistersPerSm / threads / 8 * 8 : kMaxSetMaxNReg;
  return even < kMaxSetMaxNReg ? even : kMaxSetMaxNReg;
}
// A warp-specialized block: one producer warpgroup at kProducerRegisters and `consumer_threads` threads
// beside it. The consumers' count for setmaxnreg.inc: what the block holds at launch (entry_registers of all
// its threads, not the SM's whole file: 640 threads start with 96 each, 61440 in all) less the producer's,
// shared by the consumers, rounded down to a multiple of 8, at most 256. More would block the .inc forever.
inline constexpr int64_t kProducerRegisters = 40;
constexpr int64_t consumer_registers(int64_t consumer_threads) {
  const int64_t producer = 128, threads = consumer_threads + producer;
  if (consumer_threads <= 0) return kMaxSetMaxNReg;
  const int64_t left =
      (entry_registers(threads) * threads - kProducerRegisters * producer) / consumer_threads;
  return left / 8 * 8 < kMaxSetMaxNReg ? left / 8 * 8 : kMaxSetMaxNReg;
}
static_assert(consumer_registers(256) == 232, "two consumer warpgroups: CUTLASS's 40 / 232 split");
static_assert(consumer_registers(512) == 104, "four: 96 each at launch, not 65536 / 640");

}  // namespace tilevm::target
