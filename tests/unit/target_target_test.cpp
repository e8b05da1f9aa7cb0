// target::Target (include/tilevm/target/target.h): the named targets, the arch features, and fitting a
// target to what a driver reports.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "expect_error.h"
#include "tilevm/support/error.h"
#include "tilevm/target/target.h"

namespace tilevm::target {
namespace {

TEST(TargetTarget, H100Sxm) {
  const Target t = Target::h100_sxm();
  EXPECT_EQ(t.arch, "sm_90a");
  EXPECT_EQ(t.compute_capability, 90);
  EXPECT_EQ(t.sm_count, 132);
  EXPECT_EQ(t.shared_per_block, 227 * 1024);
  EXPECT_EQ(t.shared_per_sm, 228 * 1024);
  EXPECT_EQ(t.max_threads_per_block, 1024);
  EXPECT_DOUBLE_EQ(t.dram_gbps, 3160);
  EXPECT_DOUBLE_EQ(t.mma_tflops, 474);
  EXPECT_TRUE(t.features.hopper);
  EXPECT_TRUE(t.features.wgmma);
  EXPECT_TRUE(t.features.cp_async && t.features.ldmatrix && t.features.mma_sync);
}

// Occupancy: each of the four limits binds in turn on the H100 (32 blocks, 2048 threads, 64 K registers
// allocated by 8, 228 KiB of shared memory with 1 KiB reserved per block).
TEST(TargetTarget, ResidentBlocks) {
  const Target t = Target::h100_sxm();
  EXPECT_EQ(t.resident_blocks(32, 16, 0), 32);           // blocks
  EXPECT_EQ(t.resident_blocks(256, 16, 0), 8);           // threads
  EXPECT_EQ(t.resident_blocks(128, 121, 0), 4);          // 128 registers: 65536 / (128 * 128)
  EXPECT_EQ(t.resident_blocks(128, 32, 100 * 1024), 2);  // shared: 228 KiB / 101 KiB
  EXPECT_EQ(t.resident_blocks(128, 32, 227 * 1024), 1);
  EXPECT_EQ(t.resident_blocks(1024, 255, 0), 0);  // 256 registers x 1024 threads do not fit
}

// And tensor cores that sustain more (measured: the clock holds higher under load).
TEST(TargetTarget, H200IsAnH100WithFasterMemory) {
  const Target h100 = Target::h100_sxm(), h200 = Target::h200();
  EXPECT_EQ(h200.arch, "sm_90a");
  EXPECT_EQ(h200.sm_count, h100.sm_count);
  EXPECT_EQ(h200.shared_per_block, h100.shared_per_block);
  EXPECT_DOUBLE_EQ(h200.dram_gbps, 4300);
  EXPECT_GT(h200.l2_gbps, h100.l2_gbps);
  EXPECT_GT(h200.mma_tflops, h100.mma_tflops);
  EXPECT_GT(h200.gemm_tflops, h100.gemm_tflops);
}

TEST(TargetTarget, GenericSm80) {
  const Target t = Target::generic_sm80();
  EXPECT_EQ(t.arch, "sm_80");
  EXPECT_EQ(t.compute_capability, 80);
  EXPECT_EQ(t.sm_count, 108);
  EXPECT_EQ(t.shared_per_block, 163 * 1024);
  EXPECT_FALSE(t.features.hopper);
  EXPECT_FALSE(t.features.wgmma);
  EXPECT_FALSE(t.features.bf16x2_add);
  EXPECT_TRUE(t.features.cp_async && t.features.ldmatrix && t.features.mma_sync);
  EXPECT_NEAR(t.mma_tflops, 250, 1e-9);
  EXPECT_DOUBLE_EQ(t.dram_gbps, 1800);  // 80 GB
}

TEST(TargetTarget, FeaturesOfArchNames) {
  EXPECT_TRUE(Target::features_of("sm_90a").wgmma);
  EXPECT_FALSE(Target::features_of("sm_90").wgmma);  // wgmma needs the arch-specific target
  EXPECT_TRUE(Target::features_of("sm_90").hopper);
  EXPECT_FALSE(Target::features_of("sm_89").hopper);
  EXPECT_TRUE(Target::features_of("sm_120").hopper);
  EXPECT_FALSE(Target::features_of("sm_100a").wgmma);
  for (const char* bad : {"sm_75", "sm_70"}) {
    try {
      Target::features_of(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("needs sm_80 or newer"), std::string::npos) << e.what();
    }
  }
  for (const char* bad : {"", "sm90", "compute_90", "sm_9"}) {
    try {
      Target::features_of(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("is not a CUDA architecture"), std::string::npos) << e.what();
    }
  }
}

TEST(TargetTarget, H100LikeScalesTheRatesBySmCount) {
  const Target half = Target::h100_like(66);
  EXPECT_EQ(half.sm_count, 66);
  EXPECT_NEAR(half.dram_gbps, 3160.0 / 2, 1e-9);
  EXPECT_NEAR(half.mma_tflops, 474.0 / 2, 1e-9);
  EXPECT_EQ(half.shared_per_block, 227 * 1024);  // limits per block and SM do not scale
  EXPECT_EQ(Target::h100_like(132).name, "H100 SXM");
  EXPECT_EQ(Target::h100_like(0).sm_count, 1);
}

TEST(TargetTarget, FromPropertiesTakesReportedLimits) {
  DeviceProperties d;
  d.name = "NVIDIA GeForce RTX 4090";
  d.arch = "sm_89";
  d.sm_count = 128;
  d.max_threads_per_block = 1024;
  d.max_shared_per_block_optin = 99 * 1024;
  d.max_shared_per_sm = 100 * 1024;
  d.l2_cache_bytes = 72 * 1024 * 1024;
  const Target t = Target::from_properties(d);
  EXPECT_EQ(t.name, d.name);
  EXPECT_EQ(t.arch, "sm_89");
  EXPECT_EQ(t.compute_capability, 89);
  EXPECT_FALSE(t.features.hopper);
  EXPECT_EQ(t.shared_per_block, 99 * 1024);
  EXPECT_EQ(t.shared_per_sm, 100 * 1024);
  EXPECT_EQ(t.l2_cache_bytes, 72 * 1024 * 1024);
  EXPECT_EQ(t.max_threads_per_sm, 1536);
  EXPECT_EQ(t.max_blocks_per_sm, 24);
  EXPECT_DOUBLE_EQ(t.dram_gbps, 890);
  EXPECT_DOUBLE_EQ(t.sm_dram_gbps, 3 * 890.0 / 128);
  // Nothing reported: the H100's figures.
  const Target none = Target::from_properties({});
  EXPECT_EQ(none.sm_count, 132);
  EXPECT_EQ(none.arch, "sm_90a");
  EXPECT_EQ(none.shared_per_block, 227 * 1024);
}

TEST(TargetTarget, ForArchGivesThePartOfThatGenerationWithTheArchsFeatures) {
  const Target sm90a = Target::for_arch("sm_90a");
  EXPECT_EQ(sm90a.name, "H100 SXM");
  EXPECT_EQ(sm90a.shared_per_block, 227 * 1024);
  EXPECT_TRUE(sm90a.features.wgmma);
  const Target sm90 = Target::for_arch("sm_90");
  EXPECT_EQ(sm90.arch, "sm_90");
  EXPECT_EQ(sm90.sm_count, 132);
  EXPECT_TRUE(sm90.features.hopper);
  EXPECT_FALSE(sm90.features.wgmma);  // wgmma needs the arch-specific sm_90a
  EXPECT_EQ(Target::for_arch("sm_80").shared_per_block, 163 * 1024);
  const Target sm89 = Target::for_arch("sm_89");
  EXPECT_EQ(sm89.compute_capability, 89);
  EXPECT_EQ(sm89.shared_per_block, 99 * 1024);
  EXPECT_EQ(sm89.max_threads_per_sm, 1536);
  EXPECT_FALSE(sm89.features.hopper);
  expect_error([] { Target::for_arch("sm_75"); }, "sm_75 is not supported");
  expect_error([] { Target::for_arch("hopper"); }, "hopper");
  // An unknown number is refused here, not given the H100's figures and left to NVRTC.
  expect_error([] { Target::for_arch("sm_95"); }, "'sm_95' is not a CUDA architecture tilevm knows");
  expect_error([] { Target::for_arch("sm_86a"); }, "the arch-specific 'a' form exists from sm_90");
  EXPECT_EQ(Target::for_arch("sm_120").compute_capability, 120);
}

TEST(TargetTarget, TableByName) {
  EXPECT_EQ(Target::known_names(), (std::vector<std::string>{"a100", "h100", "h200", "l40s"}));
  EXPECT_EQ(Target::by_name("h100").name, Target::h100_sxm().name);
  EXPECT_EQ(Target::by_name("H200").name, "H200");  // case-insensitive
  EXPECT_EQ(Target::by_name("a100").arch, "sm_80");
  EXPECT_EQ(Target::by_name("l40s").name, "L40S");
  expect_error([] { Target::by_name("v100"); }, "unknown target 'v100' (one of: a100, h100, h200, l40s)");
  for (const std::string& name : Target::known_names()) {
    const Target t = Target::by_name(name);
    SCOPED_TRACE(name);
    // Every row is complete: limits, rates and the clock that gives shared memory's bandwidth.
    EXPECT_GT(t.sm_count, 100);
    EXPECT_GT(t.shared_per_sm, t.shared_per_block);
    EXPECT_GT(t.l2_cache_bytes, 0);
    EXPECT_GT(t.l2_gbps, t.dram_gbps);
    EXPECT_GE(t.gemm_tflops, t.mma_tflops);
    EXPECT_GT(t.fma_tflops, 0);
    EXPECT_GT(t.shared_gbps(), t.l2_gbps);
    EXPECT_EQ(t.max_registers_per_thread, 255);
  }
}

TEST(TargetTarget, L40sIsAdaWithoutHopperInstructions) {
  const Target t = Target::l40s();
  EXPECT_EQ(t.arch, "sm_89");
  EXPECT_EQ(t.compute_capability, 89);
  EXPECT_EQ(t.sm_count, 142);
  EXPECT_FALSE(t.features.hopper);  // no TMA, no mbarrier transactions
  EXPECT_FALSE(t.features.wgmma);
  EXPECT_TRUE(t.features.cp_async && t.features.mma_sync && t.features.ldmatrix);
  EXPECT_EQ(t.shared_per_block, 99 * 1024);
  EXPECT_EQ(t.max_threads_per_sm, 1536);
  EXPECT_EQ(t.max_blocks_per_sm, 24);
  EXPECT_EQ(t.l2_cache_bytes, 48 * 1024 * 1024);
  // The same rates from_properties gives a device that calls itself an L40S.
  const Target fitted = Target::from_properties({.name = "NVIDIA L40S", .arch = "sm_89", .sm_count = 142});
  EXPECT_DOUBLE_EQ(fitted.dram_gbps, t.dram_gbps);
  EXPECT_DOUBLE_EQ(fitted.mma_tflops, t.mma_tflops);
  EXPECT_DOUBLE_EQ(fitted.gemm_tflops, t.gemm_tflops);
  EXPECT_EQ(fitted.max_threads_per_sm, t.max_threads_per_sm);
}

TEST(TargetTarget, TableRowsAgreeWithFittedDevices) {
  // The table's H200 and A100 rows are what from_properties makes of those devices.
  const Target h200 = Target::from_properties({.name = "NVIDIA H200",
                                               .arch = "sm_90a",
                                               .sm_count = 132,
                                               .max_shared_per_block_optin = 227 * 1024,
                                               .max_shared_per_sm = 228 * 1024,
                                               .l2_cache_bytes = 50 * 1024 * 1024});
  const Target a100 = Target::from_properties({.name = "NVIDIA A100-SXM4-80GB",
                                               .arch = "sm_80",
                                               .sm_count = 108,
                                               .max_shared_per_block_optin = 163 * 1024,
                                               .max_shared_per_sm = 164 * 1024,
                                               .l2_cache_bytes = 40 * 1024 * 1024,
                                               .total_memory = std::size_t{80} << 30});
  for (const auto& [table, fitted] :
       {std::pair{Target::h200(), h200}, std::pair{Target::generic_sm80(), a100}}) {
    SCOPED_TRACE(table.name);
    EXPECT_EQ(table.sm_count, fitted.sm_count);
    EXPECT_EQ(table.shared_per_block, fitted.shared_per_block);
    EXPECT_EQ(table.shared_per_sm, fitted.shared_per_sm);
    EXPECT_EQ(table.l2_cache_bytes, fitted.l2_cache_bytes);
    EXPECT_DOUBLE_EQ(table.dram_gbps, fitted.dram_gbps);
    EXPECT_DOUBLE_EQ(table.l2_gbps, fitted.l2_gbps);
    EXPECT_NEAR(table.mma_tflops, fitted.mma_tflops, 1e-9);
    EXPECT_NEAR(table.gemm_tflops, fitted.gemm_tflops, 1e-9);
    EXPECT_DOUBLE_EQ(table.fma_tflops, fitted.fma_tflops);
    EXPECT_NEAR(table.sm_dram_gbps, fitted.sm_dram_gbps, 1e-9);
  }
}

}  // namespace
}  // namespace tilevm::target
