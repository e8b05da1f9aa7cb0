// Thread-block clusters (docs/language.md section 5, "Clusters"): the header's cluster= and its checks,
// ClusterSync(), CopyTma's multicast= and BarrierArrive's rank= through the verifier, the interpreter (the
// blocks of a cluster run together; tests/golden/run/cluster_*.tile has the mistakes it reports) and the
// emitter. That the emitted code compiles is codegen_compile_test.cpp's (every golden program); ClusterGpu
// runs the multicast program on the device against the interpreter.
#include <gtest/gtest.h>

#include "interp_test_util.h"
#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/ir/printer.h"
#include "tilevm/support/error.h"

namespace tilevm {
namespace {

using interp::testing::parse_verified;
using interp::testing::run;

std::string errors_of(const std::string& text) {
  Diagnostics diags;
  std::optional<ir::Program> p = ir::parse_program(text, diags);
  if (p && !diags.has_errors()) transform::lower(*std::move(p), diags, {.verify_each_pass = true});
  return diags.render("test.tile", text);
}

// A 2-D grid of blocks in clusters of 2 x 1, each block loading one 8 x 16 half of a 16 x 16 tile and
// multicasting it to the cluster, so that both blocks hold the whole tile; each block stores the half it
// did not load. The block of rank r (x fastest: bx % 2) is the one that loads rows 8r..8r+7.
std::string multicast_program(const std::string& mask, const std::string& sync = "    ClusterSync()\n") {
  return "def multicast<4, 3>[threads=32, cluster=[2, 1]](f16* x_ptr, f16* y_ptr):\n"
         "    bx, by = BlockIndices()\n"
         "    rank = bx % 2\n"
         "    gx = ViewGlobal(x_ptr, dtype=f16, shape=[48, 16])\n"
         "    gy = ViewGlobal(y_ptr, dtype=f16, shape=[4, 3, 8, 16])\n"
         "    tiles = AllocateShared(f16, shape=[2, 8, 16])\n"
         "    full = AllocateBarrier(count=1, shape=[1])\n" +
         sync +
         "    BarrierArrive(full[0], tx=512)\n"
         "    CopyTma(tiles[rank], gx[by * 16 + rank * 8:, :], barrier=full[0], multicast=" +
         mask +
         ")\n"
         "    BarrierWait(full[0], parity=0)\n"
         "    x = LoadShared(tiles[1 - rank], layout=spatial(8, 4).local(1, 4))\n"
         "    StoreGlobal(x, gy[bx, by, :, :])\n";
}

TEST(Cluster, HeaderParsesPrintsAndRoundTrips) {
  const ir::Program p = parse_verified(multicast_program("3"));
  EXPECT_EQ(p.cluster, (std::vector<int64_t>{2, 1}));
  const std::string printed = ir::print_program(p);
  EXPECT_NE(printed.find("[threads=32, cluster=[2, 1]]"), std::string::npos) << printed;
  EXPECT_NE(printed.find("multicast=3"), std::string::npos) << printed;
  EXPECT_EQ(ir::print_program(parse_verified(printed)), printed);
  // cluster= may come first, and one extent stands for the first dimension.
  EXPECT_EQ(parse_verified("def k<2>[cluster=2, threads=32](f32* p):\n    ClusterSync()\n").cluster,
            (std::vector<int64_t>{2}));
}

// The program's diagnostics hold `message` (printed when they do not).
void expect_diagnostic(const std::string& text, const std::string& message) {
  const std::string e = errors_of(text);
  EXPECT_NE(e.find(message), std::string::npos) << "expected '" << message << "' in:\n" << e;
}

TEST(Cluster, BadHeadersAreLocatedErrors) {
  expect_diagnostic("def k<2>[threads=32, cluster=0](f32* p):\n    pass\n",
                    "test.tile:1:30: error: a cluster extent must be positive, got 0");
  expect_diagnostic("def k<4, 4>[threads=32, cluster=[4, 4]](f32* p):\n    pass\n",
                    "a cluster of 16 blocks; a GPU launches clusters of at most 8");
  expect_diagnostic("def k<4>[threads=32, cluster=[2, 2]](f32* p):\n    pass\n",
                    "cluster= has 2 extents but the grid has 1 dimensions");
  expect_diagnostic("def k<4>[threads=32, clusters=2](f32* p):\n    pass\n",
                    "expected threads= or cluster=, got 'clusters'");
}

TEST(Cluster, TheVerifierChecksWhatNeedsACluster) {
  expect_diagnostic(
      "def k<2>[threads=32](f32* p):\n    ClusterSync()\n",
      "test.tile:2:5: error: ClusterSync() needs a thread-block cluster: declare one in the header "
      "([cluster=2])");
  expect_diagnostic(multicast_program("4"),
                    "multicast mask 4 names no block or blocks past the cluster's 2 (bits 0 to 1)");
  expect_diagnostic(
      "def k<2>[threads=32, cluster=2](f32* p):\n    b = AllocateBarrier(count=1, shape=[1])\n"
      "    BarrierArrive(b[0], rank=2)\n",
      "test.tile:3:30: error: BarrierArrive: rank 2 is not a block of the cluster of 2 blocks");
  expect_diagnostic(
      "def k<2>[threads=256, cluster=2](f32* p):\n    with Warpgroups(0, 1):\n        ClusterSync()\n"
      "    with Warpgroups(1, 2):\n        pass\n",
      "test.tile:3:9: error: ClusterSync() inside the region Warpgroups(0, 1)");
}

TEST(Cluster, MulticastReachesEveryBlockOfTheCluster) {
  const ir::Program p = parse_verified(multicast_program("3"));
  std::vector<double> xs;
  for (int i = 0; i < 48 * 16; ++i) xs.push_back(static_cast<double>((i * 7) % 61) - 30.0);
  std::vector<uint8_t> x = interp::testing::pack_values(DataType::f16(), xs);
  std::vector<uint8_t> y(4 * 3 * 8 * 16 * 2, 0xFF);  // NaN: every element must be written
  const interp::testing::RunResult r = run(p, {{"x_ptr", &x}, {"y_ptr", &y}});
  ASSERT_TRUE(r.ok) << r.errors << r.notes;
  const std::vector<double> got = interp::testing::unpack_values(DataType::f16(), y, 4 * 3 * 8 * 16);
  for (int bx = 0; bx < 4; ++bx)
    for (int by = 0; by < 3; ++by)
      for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 16; ++j) {
          // The half the other block of the pair loaded: rows 8 (1 - rank) + i of the by-th 16-row tile.
          const int row = by * 16 + (1 - bx % 2) * 8 + i;
          ASSERT_EQ(got[static_cast<size_t>(((bx * 3 + by) * 8 + i) * 16 + j)],
                    xs[static_cast<size_t>(row * 16 + j)])
              << "block " << bx << ", " << by << " element " << i << ", " << j;
        }
}

// A ClusterSync() orders the blocks' global stores (barrier.cluster's release and acquire), as a ticket
// would: each block stores its row of x into w, and after the sync reads its partner's row back. Without the
// sync the block-order checker reports the read (or, under a schedule that runs the reader first, the store
// after it) as unordered.
TEST(Cluster, ClusterSyncOrdersGlobalStoresBetweenTheBlocks) {
  auto program = [](const std::string& sync) {
    return "def swap<4>[threads=32, cluster=2](f32* x_ptr, f32* w_ptr, f32* y_ptr):\n"
           "    b = BlockIndices()\n"
           "    partner = b + 1 - 2 * (b % 2)\n"
           "    gx = ViewGlobal(x_ptr, dtype=f32, shape=[4, 32])\n"
           "    gw = ViewGlobal(w_ptr, dtype=f32, shape=[4, 32])\n"
           "    gy = ViewGlobal(y_ptr, dtype=f32, shape=[4, 32])\n"
           "    x = LoadGlobal(gx[b, :], layout=spatial(32))\n"
           "    StoreGlobal(x, gw[b, :])\n" +
           sync +
           "    z = LoadGlobal(gw[partner, :], layout=spatial(32))\n"
           "    StoreGlobal(z, gy[b, :])\n";
  };
  std::vector<double> xs;
  for (int i = 0; i < 4 * 32; ++i) xs.push_back(i * 0.5 - 7);
  std::vector<uint8_t> x = interp::testing::pack_values(DataType::f32(), xs);
  std::vector<uint8_t> w(4 * 32 * 4, 0), y(4 * 32 * 4, 0xFF);
  const interp::testing::RunResult r =
      run(parse_verified(program("    ClusterSync()\n")), {{"x_ptr", &x}, {"w_ptr", &w}, {"y_ptr", &y}});
  ASSERT_TRUE(r.ok) << r.errors << r.notes;
  const std::vector<double> got = interp::testing::unpack_values(DataType::f32(), y, 4 * 32);
  for (int b = 0; b < 4; ++b)
    for (int j = 0; j < 32; ++j)
      ASSERT_EQ(got[static_cast<size_t>(b * 32 + j)], xs[static_cast<size_t>((b ^ 1) * 32 + j)])
          << b << ", " << j;
  const interp::testing::RunResult unordered =
      run(parse_verified(program("")), {{"x_ptr", &x}, {"w_ptr", &w}, {"y_ptr", &y}});
  EXPECT_FALSE(unordered.ok);
  EXPECT_NE(unordered.errors.find("global 'w_ptr' element at offset"), std::string::npos) << unordered.errors;
  EXPECT_NE(unordered.errors.find("or a ClusterSync() both took after it in one cluster"), std::string::npos)
      << unordered.errors;
}

TEST(Cluster, AMaskWithoutTheOtherBlockLeavesItsBarrierShort) {
  // Each block multicasts only to itself: neither gets the other's half, and both wait forever.
  std::vector<uint8_t> x(48 * 16 * 2, 0), y(4 * 3 * 8 * 16 * 2, 0);
  const interp::testing::RunResult r2 =
      run(parse_verified(multicast_program("1 << rank")), {{"x_ptr", &x}, {"y_ptr", &y}});
  EXPECT_FALSE(r2.ok);
  EXPECT_NE(r2.errors.find("deadlock: the block [0, 0] waits here on full[0] (parity 0), whose phase 0 still "
                           "needs 256 bytes"),
            std::string::npos)
      << r2.errors;
}

TEST(Cluster, TheEmitterDeclaresTheClusterAndReachesOtherBlocks) {
  const std::string text =
      "def k<2>[threads=32, cluster=2](f16* x_ptr):\n"
      "    pid = BlockIndices()\n"
      "    gx = ViewGlobal(x_ptr, dtype=f16, shape=[16, 64])\n"
      "    tiles = AllocateShared(f16, shape=[2, 8, 64])\n"
      "    full = AllocateBarrier(count=1, shape=[1])\n"
      "    done = AllocateBarrier(count=2, shape=[1])\n"
      "    ClusterSync()\n"
      "    BarrierArrive(full[0], tx=2048)\n"
      "    CopyTma(tiles[pid % 2], gx[pid % 2 * 8:, :], barrier=full[0], multicast=3)\n"
      "    BarrierWait(full[0], parity=0)\n"
      "    BarrierArrive(done[0], rank=1 - pid % 2)\n"
      "    BarrierArrive(done[0])\n"
      "    BarrierWait(done[0], parity=0)\n";
  const ir::Program p = parse_verified(text);
  const std::string cuda = codegen::cuda::emit_cuda(p, {.target = target::Target::for_arch("sm_90a")}).source;
  EXPECT_NE(cuda.find("__cluster_dims__(2, 1, 1)"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("barrier.cluster.arrive.release.aligned"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find(".multicast::cluster"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("mapa.shared::cluster.u32"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("mbarrier.arrive.shared::cluster.b64"), std::string::npos) << cuda;
  // Not a release at cluster scope: it made each pipeline step wait (docs/performance.md, 2026-11-29).
  EXPECT_EQ(cuda.find(".release.cluster.shared::cluster"), std::string::npos) << cuda;
  // The interpreter runs it: both blocks' arrivals complete each other's `done`.
  std::vector<uint8_t> x(16 * 64 * 2, 0);
  EXPECT_TRUE(run(p, {{"x_ptr", &x}}).ok);
  // An Ampere target cannot launch clusters.
  try {
    codegen::cuda::emit_cuda(p, {.target = target::Target::for_arch("sm_80")});
    ADD_FAILURE() << "emitted for sm_80";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs sm_90"), std::string::npos) << e.what();
  }
}

// The multicast program on the GPU against the interpreter, bit for bit, the output poisoned with NaN.
TEST(ClusterGpu, MulticastMatchesTheInterpreter) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  const ir::Program p = parse_verified(multicast_program("3"));
  std::vector<double> xs;
  for (int i = 0; i < 48 * 16; ++i) xs.push_back(static_cast<double>((i * 13) % 97) / 8.0 - 6.0);
  const std::vector<uint8_t> x = interp::testing::pack_values(DataType::f16(), xs);
  const std::vector<uint8_t> nan(4 * 3 * 8 * 16 * 2, 0xFF);
  std::vector<uint8_t> x_cpu = x, y_cpu = nan, x_gpu = x, y_gpu = nan;
  const interp::testing::RunResult r = run(p, {{"x_ptr", &x_cpu}, {"y_ptr", &y_cpu}});
  ASSERT_TRUE(r.ok) << r.errors;
  interp::Arguments args;
  args.buffers = {{"x_ptr", &x_gpu}, {"y_ptr", &y_gpu}};
  Diagnostics diags;
  ASSERT_TRUE(exec::run_on_gpu(p, args, diags)) << diags.render("multicast.tile", multicast_program("3"));
  EXPECT_EQ(y_gpu, y_cpu);
}

}  // namespace
}  // namespace tilevm
