// A compilation target: the GPU a kernel is built and tuned for, as the numbers the layers above read.
//
// Every hardware figure lives here and nowhere else: the limits a kernel must respect (threads, shared
// memory), the architecture and the instructions it offers, and the rates a cost model divides by. The
// named constructors give the GPUs the project targets; from_properties() fits one to what a driver reports
// (runtime::DeviceInfo's fields, copied by exec::device_target, so that this layer stays below the runtime):
//
//   Target t = Target::h100_sxm();                  // 132 SMs, 227 KB shared per block, sm_90a
//   t.arch                                          // "sm_90a"
//   t.features.hopper                               // true: TMA, mbarrier transactions, clusters
//   t.shared_per_block                              // 232448 (227 KB: what a kernel may opt in to)
//   Target::by_name("l40s")                         // a row of the GPU table (src/target/gpu_table.cpp)
//
// The GPUs the project describes (A100, H100, H200, L40S) are rows of one table of figures, each with its
// source; the named constructors and by_name() read it.
//
// The rates are what the cost models need (bytes and operations per second the hardware sustains), measured
// where the project had the device (docs/performance.md) and about 88% of the data sheet elsewhere. They rank
// configurations; they are not promises.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tilevm::target {

// What an architecture offers the emitter (PTX ISA, "Target ISA notes"). Each later arch has the earlier
// ones' instructions; the Hopper ones need sm_90, and wgmma and setmaxnreg the arch-specific sm_90a.
struct ArchFeatures {
  bool cp_async = false;    // cp.async global -> shared, commit and wait groups (sm_80)
  bool ldmatrix = false;    // ldmatrix .x1/.x2/.x4 (sm_75)
  bool mma_sync = false;    // mma.sync m16n8k16 f16/bf16 and m16n8k32 s8/u8 (sm_80)
  bool bf16x2_add = false;  // add/sub/mul.rn.bf16x2 (sm_90; sm_80 spells them as fma)
  bool hopper = false;      // TMA, mbarrier transaction counts, thread-block clusters (sm_90)
  bool wgmma = false;       // wgmma.mma_async and setmaxnreg (sm_90a only)
};

// The fields of runtime::DeviceInfo a target is fitted to (0 or "": not reported).
struct DeviceProperties {
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::string arch;  // "sm_90a"
  int sm_count = 0;
  int max_threads_per_block = 0;
  int max_shared_per_block_optin = 0;
  int max_shared_per_sm = 0;
  int l2_cache_bytes = 0;
  std::size_t total_memory = 0;
};

struct Target {
  std::string name;            // "H100 SXM", or the device's name
  std::string arch;            // "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", ...
  int compute_capability = 0;  // 80, 86, 89, 90, ...
  ArchFeatures features;

  // Limits.
  int sm_count = 0;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int64_t shared_per_block = 0;  // bytes a kernel may use after opting in
  int64_t shared_per_sm = 0;
  int64_t shared_reserved_per_block = 1024;  // what the driver keeps of each resident block's share
  int64_t registers_per_sm = 65536;
  int64_t l2_cache_bytes = 0;

  // Rates, whole chip.
  double dram_gbps = 0;          // read bandwidth of a large stream
  double l2_gbps = 0;            // L2 -> SM bandwidth
  double mma_tflops = 0;         // f16 mma.sync with f32 accumulation, as kernels reach it (not the peak)
  double gemm_tflops = 0;        // cuBLAS's large f16 GEMM (wgmma on Hopper): what a dense GEMM reaches
  double fma_tflops = 0;         // f32 FMA (2 flops each)
  double sm_dram_gbps = 0;       // what one SM alone can pull from DRAM
  double dram_latency_ns = 700;  // loaded DRAM latency: bytes in flight needed = bandwidth * latency
  double launch_us = 2.5;        // launch and ramp-down of one kernel, as CUDA events measure it
  double clock_ghz = 1.98;       // boost clock: shared memory delivers its bytes per clock
  int64_t shared_bytes_per_clock = 128;  // per SM: 32 banks of 4 bytes
  int max_registers_per_thread = 255;
  // The bubble of one block-wide wait (a barrier, an async-copy or wgmma wait) that the block's own warps
  // cannot fill: about 60 cycles, a guess that the tile recommendation's measurements can refine.
  double sync_ns = 30;

  // Blocks of `threads` threads, `registers` registers each (allocated in units of 8) and `shared_bytes` of
  // shared memory (plus the driver's reserve) that one SM holds at once; 0 when one does not fit.
  int64_t resident_blocks(int64_t threads, int64_t registers, int64_t shared_bytes) const;

  // Shared-memory bandwidth of the whole chip (bytes per clock of every SM).
  double shared_gbps() const {
    return static_cast<double>(sm_count) * static_cast<double>(shared_bytes_per_clock) * clock_ghz;
  }

  // H100 SXM (132 SMs, 3160 GB/s measured, sm_90a).
  static Target h100_sxm();
  // H200 (the H100's SMs, 4300 GB/s measured, sm_90a).
  static Target h200();
  // A generic sm_80 part: the A100 SXM's figures (108 SMs, 164 KB shared per block).
  static Target generic_sm80();
  // L40S (Ada, sm_89: cp.async and mma.sync, no TMA or wgmma; 142 SMs, 99 KB shared per block).
  static Target l40s();
  // A GPU of the table by its short name, case-insensitive: "a100", "h100", "h200" or "l40s".
  // @throws tilevm::Error "unknown target 'X' (one of: a100, h100, h200, l40s)".
  static Target by_name(const std::string& name);
  // The short names by_name() takes, in table order.
  static const std::vector<std::string>& known_names();
  // The H100's figures scaled to `sm_count` SMs: for choosing a configuration without a device.
  static Target h100_like(int sm_count = 132);
  // The H100's figures fitted to a device: known parts by name (H200, H100 PCIe and NVL, A100, L40S, RTX
  // 4090), others scaled by SM count; the architecture's features and tensor-core rate from its arch;
  // reported limits (shared memory, threads, L2) overwrite the defaults.
  static Target from_properties(const DeviceProperties& properties);
  // A target for an arch name alone, when there is no device to ask (`tilevm emit --arch`, tests): the
  // figures of the project's part of that generation (sm_90/sm_90a: the H100 SXM; sm_80: generic_sm80();
  // sm_86/sm_89: the A100's rates with the consumer parts' 99 KB of shared memory and 1536 threads per SM;
  // newer: the H100's figures) with the arch's own features.
  // @throws tilevm::Error as features_of.
  static Target for_arch(const std::string& arch);

  // The features of an arch name ("sm_90a" -> everything; "sm_80" -> cp.async, ldmatrix, mma.sync).
  // @throws tilevm::Error on a name that is not sm_NN[a] or is older than sm_80.
  static ArchFeatures features_of(const std::string& arch);
};

}  // namespace tilevm::target
