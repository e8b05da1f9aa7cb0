// Warp-specialized regions on the interpreter (docs/language.md section 7, "Regions"): the example runs clean
// and right under every schedule, the schedules interleave as they say, and each kind of mistake is
// reported (the golden cases tests/golden/run/regions_* show the messages whole).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "codegen_test_util.h"
#include "interp_test_util.h"
#include "tilevm/ir/verifier.h"

namespace tilevm::interp {
namespace {

using testing::pack_values;
using testing::run;
using testing::unpack_values;

// examples/tma_warp_specialized.tile: y = 2 x and s = the row sums of each BN-column stripe.
TEST(InterpRegions, WarpSpecializedExampleIsRightUnderEverySchedule) {
  const std::optional<ir::Program> p =
      codegen_test::load_program(codegen_test::source_root() / "examples" / "tma_warp_specialized.tile");
  ASSERT_TRUE(p);
  std::vector<Schedule> schedules = Schedule::standard();
  for (uint64_t seed = 5; seed <= 8; ++seed) schedules.push_back({Schedule::Policy::Random, seed});
  std::mt19937 rng(14);
  for (const auto& [m, n] : std::vector<std::pair<int, int>>{{40, 128}, {37, 192}, {5, 64}}) {
    std::vector<double> x(static_cast<size_t>(m) * n);
    for (double& v : x) v = static_cast<double>(static_cast<int>(rng() % 129) - 64) / 8;
    for (const Schedule& s : schedules) {
      SCOPED_TRACE(fmt::format("M = {}, N = {}, schedule {}", m, n, s.name()));
      std::vector<uint8_t> xb = pack_values(DataType::f16(), x);
      std::vector<uint8_t> yb(x.size() * 2, 0xff), sb(static_cast<size_t>(m) * (n / 64) * 4, 0xff);
      RunOptions options;
      options.schedules = {s};
      const auto r = run(*p, {{"x_ptr", &xb}, {"y_ptr", &yb}, {"s_ptr", &sb}},
                         {{"M", testing::int_arg(m)}, {"N", testing::int_arg(n)}}, options);
      ASSERT_TRUE(r.ok) << r.errors << r.notes;
      const std::vector<double> y = unpack_values(DataType::f16(), yb, m * n);
      const std::vector<double> sums = unpack_values(DataType::f32(), sb, m * (n / 64));
      for (size_t k = 0; k < x.size(); ++k) ASSERT_EQ(y[k], 2 * x[k]) << "y element " << k;
      for (int row = 0; row < m; ++row)
        for (int c = 0; c < n / 64; ++c) {
          double ref = 0;
          for (int k = 0; k < 64; ++k) ref += x[static_cast<size_t>(row * n + c * 64 + k)];
          ASSERT_EQ(sums[static_cast<size_t>(row * (n / 64) + c)], static_cast<float>(ref))
              << row << ", " << c;
        }
    }
  }
}

TEST(InterpRegions, SchedulesHaveNames) {
  for (const Schedule& s : Schedule::standard()) {
    const std::optional<Schedule> back = Schedule::parse(s.name());
    ASSERT_TRUE(back) << s.name();
    EXPECT_EQ(back->name(), s.name());
  }
  EXPECT_EQ(Schedule::parse("random:18446744073709551615")->seed, UINT64_MAX);
  for (const char* bad : {"", "random:", "random:x", "random:-1", "random:1x", "in order", "Reverse"})
    EXPECT_FALSE(Schedule::parse(bad)) << bad;
}

// Two regions that print around a barrier: the printed order shows how the schedule interleaves them.
const char* kPingPong =
    "def ping_pong<1>[threads=256]():\n"
    "    b = AllocateBarrier(count=1, shape=[1])\n"
    "    with Warpgroups(0, 1):\n"
    "        Print(1)\n"
    "        BarrierArrive(b)\n"
    "        Print(2)\n"
    "    with Warpgroups(1, 2):\n"
    "        Print(10)\n"
    "        BarrierWait(b, parity=0)\n"
    "        Print(20)\n";

std::string printed_under(const ir::Program& p, const std::string& schedule) {
  RunOptions options;
  options.schedules = {*Schedule::parse(schedule)};
  const auto r = run(p, {}, {}, options);
  EXPECT_TRUE(r.ok) << r.errors;
  std::string out;
  for (char c : r.printed)
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '\n') out += c == '\n' ? ' ' : c;
  return out;
}

TEST(InterpRegions, SchedulesInterleaveAsTheySay) {
  const ir::Program p = testing::parse_verified(kPingPong);
  // in-order: the first region to its end, then the second.
  EXPECT_EQ(printed_under(p, "in-order"), "1 2 10 20 ");
  // reverse: the second first, until its wait; the first then runs to its end.
  EXPECT_EQ(printed_under(p, "reverse"), "10 1 2 20 ");
  // round-robin: the baton passes after every barrier instruction (the arrival, then the wait).
  EXPECT_EQ(printed_under(p, "round-robin"), "1 10 2 20 ");
  // random:N is one fixed interleaving per seed, and the seeds give several.
  std::set<std::string> seen;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const std::string name = fmt::format("random:{}", seed);
    const std::string once = printed_under(p, name);
    EXPECT_EQ(printed_under(p, name), once) << name;
    seen.insert(once);
  }
  EXPECT_GE(seen.size(), 3u);
}

TEST(InterpRegions, ADeadlockNamesWhereEachRegionWaits) {
  const ir::Program p = testing::parse_verified(
      "def stuck<1>[threads=384]():\n"
      "    a = AllocateBarrier(count=1, shape=[1])\n"
      "    b = AllocateBarrier(count=1, shape=[1])\n"
      "    with Warpgroups(0, 1):\n"
      "        BarrierWait(a, parity=0)\n"
      "        BarrierArrive(b)\n"
      "    with Warpgroups(1, 2):\n"
      "        BarrierWait(b, parity=0)\n"
      "        BarrierArrive(a)\n"
      "    with Warpgroups(2, 3):\n"
      "        Print(1)\n");
  RunOptions options;
  options.schedules = {*Schedule::parse("in-order")};
  const auto r = run(p, {}, {}, options);
  // The first region blocks, then the second; the third finishes, and nothing can go on.
  EXPECT_EQ(r.errors,
            "5:9: deadlock: the region Warpgroups(0, 1) waits here on a[0] (parity 0), whose phase 0 still "
            "needs 1 arrival, and every other region of the section has finished or waits too (the GPU would "
            "hang)\n");
  EXPECT_EQ(r.notes,
            "8:9: the region Warpgroups(1, 2) waits here on b[0] (parity 0), whose phase 0 still needs 1 "
            "arrival\n"
            "10:5: the region Warpgroups(2, 3) has finished\n");
}

TEST(InterpRegions, EachRegionHasItsOwnCopyAsyncGroups) {
  // The consumer's CopyAsyncWaitGroup does not land the producer's copy: cp.async groups are per thread.
  const ir::Program p = testing::parse_verified(
      "def groups<1>[threads=256](f32* x_ptr):\n"
      "    gx = ViewGlobal(x_ptr, dtype=f32, shape=[128])\n"
      "    buf = AllocateShared(f32, shape=[128])\n"
      "    ready = AllocateBarrier(count=1, shape=[1])\n"
      "    with Warpgroups(0, 1):\n"
      "        CopyAsync(buf, gx)\n"
      "        CopyAsyncCommitGroup()\n"
      "        BarrierArrive(ready)\n"
      "    with Warpgroups(1, 2):\n"
      "        BarrierWait(ready, parity=0)\n"
      "        CopyAsyncWaitGroup(0)\n"
      "        y = LoadShared(buf, layout=spatial(128))\n");
  std::vector<uint8_t> x = pack_values(DataType::f32(), std::vector<double>(128, 1.0));
  const auto r = run(p, {{"x_ptr", &x}});
  EXPECT_EQ(
      r.errors,
      "12:13: read of shared 'buf' element [0] before its CopyAsync group was waited (issued at 6:9)\n");
}

TEST(InterpRegions, WhatTheBlockWroteReachesARegionThroughASynchronize) {
  const std::string text =
      "def handoff<1>[threads=256](f32* x_ptr):\n"
      "    gx = ViewGlobal(x_ptr, dtype=f32, shape=[256])\n"
      "    buf = AllocateShared(f32, shape=[256])\n"
      "    x = LoadGlobal(gx, layout=spatial(256))\n"
      "    StoreShared(x, buf)\n"
      "{}"
      "    with Warpgroups(1, 2):\n"
      "        y = LoadShared(buf, layout=spatial(128))\n"
      "    StoreShared(x, buf)\n";
  std::vector<uint8_t> x = pack_values(DataType::f32(), std::vector<double>(256, 1.0));
  const auto racy = run(testing::parse_verified(fmt::format(fmt::runtime(text), "")), {{"x_ptr", &x}});
  EXPECT_EQ(
      racy.errors,
      "7:13: read-after-write race on shared 'buf' element [0]: thread 128 reads it, thread 0 wrote it at "
      "5:5 before the section, with no Synchronize() before the section\n");
  // With a Synchronize() before the section the read follows the write; the block's write after the section
  // needs none (the section ended when the region had: the block waited for it).
  const auto ok =
      run(testing::parse_verified(fmt::format(fmt::runtime(text), "    Synchronize()\n")), {{"x_ptr", &x}});
  EXPECT_TRUE(ok.ok) << ok.errors;
}

TEST(InterpRegions, RegistersDoNotCrossARegionsBoundary) {
  // The verifier refuses both; the interpreter does not run them wrong either (parsed, not verified). A
  // region's variables are gone after it; the block's registers are not the region's to use.
  const std::string text =
      "def leak<1>[threads=256](f32* x_ptr):\n"
      "    gx = ViewGlobal(x_ptr, dtype=f32, shape=[128])\n"
      "    b = LoadGlobal(gx, layout=spatial(256))\n"
      "    with Warpgroups(0, 1):\n"
      "        x = LoadGlobal(gx, layout=spatial(128))\n"
      "        {}\n"
      "    {}\n";
  struct Case {
    std::string in_region, after, error, verifier;
  };
  for (const Case& c :
       {Case{"pass", "StoreGlobal(x, gx)", "7:5: 'x' is used before it is defined\n",
             "leak.tile:7:17: error: 'x' is defined in the region Warpgroups(0, 1) at 4:5; a "
             "region's variables cannot be used outside it\n"},
        Case{"StoreGlobal(b, gx)", "pass",
             "6:9: register tensor 'b' is held by the block but used by a region (Warpgroups(0, "
             "1) at 4:5)\n",
             "leak.tile:6:21: error: register tensor 'b' is defined outside the region "
             "Warpgroups(0, 1) at 4:5: its layout spans the block's threads, not the region's; "
             "load or compute it inside the region\n"}}) {
    Diagnostics diags;
    const std::optional<ir::Program> p =
        ir::parse_program(fmt::format(fmt::runtime(text), c.in_region, c.after), diags);
    ASSERT_TRUE(p && !diags.has_errors()) << diags.render("leak.tile", "");
    std::vector<uint8_t> x = pack_values(DataType::f32(), std::vector<double>(128, 1.0));
    EXPECT_EQ(run(*p, {{"x_ptr", &x}}).errors, c.error);
    Diagnostics verify;
    EXPECT_FALSE(ir::verify_program(*p, verify));
    EXPECT_EQ(verify.render("leak.tile", ""), c.verifier);
  }
}

TEST(InterpRegions, ARegionThreadNumberingStartsAtItsFirstThread) {
  // A region's layouts number its own threads; the race checker names the block's (region 1's thread 0 is
  // the block's thread 128).
  const ir::Program p = testing::parse_verified(
      "def numbering<1>[threads=256](f32* x_ptr):\n"
      "    gx = ViewGlobal(x_ptr, dtype=f32, shape=[128])\n"
      "    buf = AllocateShared(f32, shape=[128])\n"
      "    with Warpgroups(1, 2):\n"
      "        x = LoadGlobal(gx, layout=spatial(128))\n"
      "        StoreShared(x, buf)\n"
      "        y = LoadShared(buf, layout=replicate(2).spatial(64).local(2))\n");
  std::vector<uint8_t> x = pack_values(DataType::f32(), std::vector<double>(128, 1.0));
  const auto r = run(p, {{"x_ptr", &x}});
  EXPECT_EQ(
      r.errors,
      "7:13: read-after-write race on shared 'buf' element [1]: thread 128 reads it, thread 129 wrote it "
      "at 6:9 with no Synchronize() in between\n");
}

}  // namespace
}  // namespace tilevm::interp
