// The emission of warp-specialized regions (src/codegen/cuda/emit_regions.cpp): one warpgroup branch chain
// per section, no __syncthreads() inside a branch (a family's block barrier becomes the region's named
// barrier), the region's own thread index and scratch, setmaxnreg and __launch_bounds__(T, 1) with
// registers=, a barrier that ends a section unless it ends the program, and the targets that refuse them.
// That the code compiles is codegen_compile_test.cpp's (NVRTC); that it runs, RegionsGpu's.
#include <gtest/gtest.h>

#include "codegen_test_util.h"
#include "expect_error.h"
#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/parser.h"
#include "tilevm/support/error.h"
#include "tilevm/transform/lower.h"

namespace tilevm {
namespace {

ir::Program lowered(const std::string& text) {
  Diagnostics diags;
  std::optional<ir::Program> p = ir::parse_program(text, diags);
  if (p && !diags.has_errors()) p = transform::lower(*std::move(p), diags, {.verify_each_pass = true});
  if (!p || diags.has_errors()) throw std::runtime_error(diags.render("test.tile", text));
  return std::move(*p);
}

codegen::cuda::EmittedKernel emit(const ir::Program& p, const char* arch = "sm_90a") {
  return codegen::cuda::emit_cuda(p, {.target = target::Target::for_arch(arch)});
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Two sections in a loop and one that ends the program; a Synchronize(), a BarrierArrive, a reduction
// through shared scratch and a Print in the regions, each of which has a block barrier inside.
const char* kProgram =
    "def regions<1>[threads=384](f32* x_ptr):\n"
    "    gx = ViewGlobal(x_ptr, dtype=f32, shape=[128])\n"
    "    buf = AllocateShared(f32, shape=[128])\n"
    "    ready = AllocateBarrier(count=1, shape=[1])\n"
    "    for k in range(2):\n"
    "        with Warpgroups(0, 1):\n"
    "            x = LoadGlobal(gx, layout=spatial(128))\n"
    "            StoreShared(x, buf)\n"
    "            Synchronize()\n"
    "            BarrierArrive(ready)\n"
    "        with Warpgroups(1, 3):\n"
    "            BarrierWait(ready, parity=k % 2)\n"
    "            y = LoadShared(buf, layout=replicate(2).spatial(128))\n"
    "            Synchronize()\n"
    "            s = ReduceSum(y, dim=0, keepdim=True)\n"
    "            Print(s)\n"
    "    with Warpgroups(2, 3):\n"
    "        z = LoadShared(buf, layout=spatial(128))\n"
    "        t = ReduceSum(z, dim=0, keepdim=True)\n"
    "        StoreGlobal(t, gx)\n";

TEST(CodegenRegions, NoBlockBarrierInsideARegion) {
  const codegen::cuda::EmittedKernel k = emit(lowered(kProgram));
  const std::string& src = k.source;
  // Outside the sections: the barriers' initialization. The loop's section ends with one; the program's
  // last section does not.
  const size_t first = src.find("const int tv_warpgroup");
  ASSERT_NE(first, std::string::npos);
  const std::string body = src.substr(first);
  EXPECT_EQ(count(body, "__syncthreads();"), 1u) << body;
  EXPECT_NE(body.find("__syncthreads();  // the section ends when each of its regions has"),
            std::string::npos);
  // Region 0 of each section synchronizes on barrier 1 with its 128 threads, region 1 on barrier 2 with 256.
  // Region 0's arrival right after its Synchronize() takes no barrier of its own (emit_block).
  EXPECT_NE(body.find("asm volatile(\"bar.sync 1, 128;\" ::: \"memory\");"), std::string::npos);
  EXPECT_NE(body.find("// the block's arrival: the Synchronize() just before it finished"),
            std::string::npos);
  EXPECT_EQ(body.find("// the block's arrival: every thread's"), std::string::npos);
  EXPECT_GE(count(body, "asm volatile(\"bar.sync 2, 256;\" ::: \"memory\");"),
            3u);  // Synchronize, reduce, print
  EXPECT_NE(body.find("if (tv_warpgroup == 0) {"), std::string::npos);
  EXPECT_NE(body.find("} else if (tv_warpgroup >= 1 && tv_warpgroup < 3) {"), std::string::npos);
  EXPECT_NE(body.find("const int t = (int)threadIdx.x - 128;  // the region's thread index"),
            std::string::npos);
  EXPECT_NE(body.find("if (tv_warpgroup == 2) {"), std::string::npos);
  EXPECT_NE(body.find("const int t = (int)threadIdx.x - 256;  // the region's thread index"),
            std::string::npos);
  // No registers=: no setmaxnreg, and the launch bounds allow more than one block per SM.
  EXPECT_EQ(src.find("setmaxnreg"), std::string::npos);
  EXPECT_NE(src.find("__launch_bounds__(384) "), std::string::npos);
}

TEST(CodegenRegions, EachRegionOfASectionHasItsOwnScratch) {
  const codegen::cuda::EmittedKernel k = emit(lowered(kProgram));
  // Region 1 of the loop's section (position 1) and region 0 of the last section (position 0) reduce
  // through shared scratch; the areas of positions 0 and 1 follow each other after the planned tensors.
  const std::string& src = k.source;
  const size_t a = src.find("tv_u8* const tv_region_scratch_0 = tv_smem + ");
  const size_t b = src.find("tv_u8* const tv_region_scratch_1 = tv_smem + ");
  ASSERT_NE(a, std::string::npos) << src;
  ASSERT_NE(b, std::string::npos) << src;
  const size_t prefix = std::string("tv_u8* const tv_region_scratch_0 = tv_smem + ").size();
  const int64_t at0 = std::stoll(src.substr(a + prefix)), at1 = std::stoll(src.substr(b + prefix));
  // Both reduce across warps: region 0's scratch holds its 4 warps' partials (4 doubles), region 1's those
  // of 4 warps for each of its 2 replicas (8 doubles).
  EXPECT_GE(at1 - at0, 4 * 8);
  EXPECT_GE(k.dynamic_shared_bytes, at1 + 8 * 8);
  EXPECT_NE(src.find("4 warps' partials through 32 bytes"), std::string::npos) << src;
  EXPECT_NE(src.find("4 warps' partials through 64 bytes"), std::string::npos) << src;
  EXPECT_NE(src.find("(double*)tv_region_scratch_1"), std::string::npos);
  EXPECT_NE(src.find("(double*)tv_region_scratch_0"), std::string::npos);
}

TEST(CodegenRegions, RegistersSetMaxNRegUnderOneBlockPerSm) {
  const ir::Program p = lowered(
      "def regs<1>[threads=384](f32* x_ptr):\n"
      "    gx = ViewGlobal(x_ptr, dtype=f32, shape=[128])\n"
      "    with Warpgroups(0, 1, registers=40):\n"
      "        x = LoadGlobal(gx, layout=spatial(128))\n"
      "    with Warpgroups(1, 3, registers=232):\n"
      "        y = LoadGlobal(gx, layout=replicate(2).spatial(128))\n");
  const std::string src = emit(p).source;
  // 384 threads start with 65536 / 384 registers rounded down to 8: 168. 40 is less, 232 more.
  EXPECT_NE(src.find("__launch_bounds__(384, 1) "), std::string::npos);
  EXPECT_NE(src.find("asm volatile(\"setmaxnreg.dec.sync.aligned.u32 40;\" ::: \"memory\");"),
            std::string::npos);
  EXPECT_NE(src.find("asm volatile(\"setmaxnreg.inc.sync.aligned.u32 232;\" ::: \"memory\");"),
            std::string::npos);
  // The section ends the program: no barrier after it (the warps' register counts differ from here on).
  EXPECT_EQ(src.find("__syncthreads();  // the section ends"), std::string::npos);
  // setmaxnreg needs sm_90a; regions need sm_90.
  expect_error([&] { emit(p, "sm_90"); },
               "3:5: cannot compile Warpgroups(0, 1, registers=40) for the GPU: setmaxnreg needs the "
               "arch-specific target sm_90a; the target is sm_90");
  expect_error([&] { emit(p, "sm_80"); },
               "3:5: cannot compile a Warpgroups region for the GPU: warp "
               "specialization needs sm_90 or newer");
}

// The barriers of a pipeline's protocol count warps (barrier_arrivals.cpp): the consumers' plain arrivals on
// empty[k % S] follow, in the same iteration, a wait on full[k % S], which the producer fills only after
// waiting on empty. Each warp then arrives after a __syncwarp, with no barrier across the region. Where the
// form does not show that no warp can arrive twice before all have arrived once, a region's barrier and one
// elected thread stay: the consumer's wait after its arrival, a producer that fills without waiting, a
// consumer loop inside another, an index variable assigned twice, the loop variable assigned, a loop by
// steps of 2, two arrival sites in one region, a count too large to count warps, the sections'
// unsubscripted barrier of kProgram.
const char* kPipeline = R"(def pipe<1>[threads=384](f16* x_ptr, f16* y_ptr, i32 M):
    gx = ViewGlobal(x_ptr, dtype=f16, shape=[M, 64])
    gy = ViewGlobal(y_ptr, dtype=f16, shape=[M, 64])
    tiles = AllocateShared(f16, shape=[2, 16, 64])
    full = AllocateBarrier(count=1, shape=[2])
    empty = AllocateBarrier(count=1, shape=[2])
    with Warpgroups(0, 1):
        for i in range((M + 15) / 16):
            BarrierWait(empty[i % 2], parity=(i / 2 + 1) % 2)
            BarrierArrive(full[i % 2], tx=2048)
            CopyTma(tiles[i % 2], gx[i * 16:, 0:], barrier=full[i % 2])
    with Warpgroups(1, 3):
        for i in range((M + 15) / 16):
            stage = i % 2
            BarrierWait(full[stage], parity=i / 2 % 2)
            x = LoadShared(tiles[stage], layout=spatial(16, 16).local(1, 4))
            BarrierArrive(empty[stage])
            StoreGlobal(x, gy[i * 16:, 0:])
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST(CodegenRegions, ThePipelinesBarriersCountWarps) {
  const std::string src = emit(lowered(kPipeline)).source;
  EXPECT_NE(src.find("every arrival is 8 warps', each its own (the count x 8)"), std::string::npos) << src;
  EXPECT_NE(src.find("\"r\"(8) : \"memory\");"), std::string::npos);  // mbarrier.init: count 1 x 8 warps
  EXPECT_EQ(count(src, "__syncwarp();  // this warp's part of the arrival"), 1u);
  EXPECT_NE(src.find("if ((t & 31) == 0) asm volatile(\"mbarrier.arrive.shared::cta.b64"), std::string::npos);
  // The producer's arrival announces bytes: one thread's, after the region's barrier.
  EXPECT_NE(src.find("asm volatile(\"bar.sync 1, 128;\" ::: \"memory\");  // the block's arrival"),
            std::string::npos);

  const std::string block_form = "asm volatile(\"bar.sync 2, 256;\" ::: \"memory\");  // the block's arrival";
  // The consumer waits after it arrives: nothing keeps a warp from arriving twice.
  std::string late = replaced(kPipeline, "            BarrierWait(full[stage], parity=i / 2 % 2)\n", "");
  late = replaced(late, "            StoreGlobal(x, gy[i * 16:, 0:])\n",
                  "            StoreGlobal(x, gy[i * 16:, 0:])\n            BarrierWait(full[stage], "
                  "parity=i / 2 % 2)\n");
  // The producer fills without waiting on empty.
  const std::string unguarded =
      replaced(kPipeline, "            BarrierWait(empty[i % 2], parity=(i / 2 + 1) % 2)\n", "");
  // The consumer's loop inside another: its iterations run again, and the protocol's count starts over.
  const std::string nested =
      replaced(kPipeline, "    with Warpgroups(1, 3):\n        for i in",
               "    with Warpgroups(1, 3):\n        for r in range(2):\n         for i in");
  // The stage variable assigned again under an if: the arrival's index is not known to be i % 2.
  const std::string reassigned =
      replaced(kPipeline, "            stage = i % 2\n",
               "            stage = i % 2\n            if i == 1:\n                stage = 0\n");
  // The loop variable assigned in the body; two arrivals on empty in one region; a count the mbarrier
  // cannot hold per warp (2^20 - 1 at most: 200000 x 8 warps).
  const std::string loop_var = replaced(kPipeline, "            stage = i % 2\n",
                                        "            i = i + 0\n            stage = i % 2\n");
  const std::string two_sites =
      replaced(kPipeline, "            BarrierArrive(empty[stage])\n",
               "            BarrierArrive(empty[stage])\n            BarrierArrive(empty[stage])\n");
  const std::string big =
      replaced(kPipeline, "empty = AllocateBarrier(count=1,", "empty = AllocateBarrier(count=200000,");
  // The consumer's loop by steps of 2: the argument's window of S iterations does not hold.
  const std::string strided =
      replaced(kPipeline, "    with Warpgroups(1, 3):\n        for i in range((M + 15) / 16):",
               "    with Warpgroups(1, 3):\n        for i in range(0, (M + 15) / 16, 2):");
  for (const std::string& text : {late, unguarded, nested, reassigned, loop_var, two_sites, big, strided}) {
    const std::string other = emit(lowered(text)).source;
    EXPECT_EQ(other.find("__syncwarp();"), std::string::npos) << other;
    EXPECT_NE(other.find(block_form), std::string::npos) << other;
  }
  const std::string sections = emit(lowered(kProgram)).source;
  EXPECT_EQ(sections.find("__syncwarp();"), std::string::npos);
}

}  // namespace
}  // namespace tilevm
