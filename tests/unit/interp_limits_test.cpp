// The interpreter's limits (issue 18): every global element checked against the memory behind its pointer,
// a memory budget instead of std::bad_alloc, a step budget instead of a run that never ends, and no grid
// that a GPU could not launch.
#include <gtest/gtest.h>

#include <chrono>

#include "interp_test_util.h"

namespace tilevm::interp {
namespace {

using testing::run;
using testing::run_text;

TEST(InterpLimits, StridesThatLeaveTheBufferAreAnErrorNotAZero) {
  std::vector<uint8_t> in = testing::pack_values(DataType::f32(), {1, 2, 3, 4});
  std::vector<uint8_t> out = testing::pack_values(DataType::f32(), {-1, -1, -1, -1});
  // A negative stride: element [1] is at -1, before the buffer (this used to be dropped silently).
  auto write = run_text(
      "def k<1>[threads=4](f32* in_ptr, f32* out_ptr):\n"
      "    g = ViewGlobal(in_ptr, dtype=f32, shape=[4])\n"
      "    o = ViewGlobal(out_ptr, dtype=f32, shape=[4], strides=[-1])\n"
      "    x = LoadGlobal(g, layout=spatial(4))\n"
      "    StoreGlobal(x, o)\n",
      {{"in_ptr", &in}, {"out_ptr", &out}});
  EXPECT_EQ(
      write.errors,
      "5:5: write of global 'out_ptr' element [1] is at element -1, outside its buffer of 4 f32 elements "
      "(view shape [4], strides [-1])\n");
  EXPECT_EQ(testing::unpack_values(DataType::f32(), out, 4), (std::vector<double>{-1, -1, -1, -1}));
  // A stride so large that the address overflows int64.
  auto read = run_text(
      "def k<1>[threads=4](f32* in_ptr):\n"
      "    g = ViewGlobal(in_ptr, dtype=f32, shape=[4], strides=[4611686018427387904])\n"
      "    x = LoadGlobal(g, layout=spatial(4))\n",
      {{"in_ptr", &in}});
  EXPECT_EQ(
      read.errors,
      "3:9: read of global 'in_ptr' element [1] is at element 4611686018427387904, outside its buffer of "
      "4 f32 elements (view shape [4], strides [4611686018427387904])\n");
}

TEST(InterpLimits, AWorkspaceBeyondTheBudgetIsReportedWithWhatItNeeds) {
  const std::string source =
      "def k<1>[threads=4](i32 n):\n"
      "    w = AllocateGlobal(f32, shape=[n, 1000000], init=0.0)\n";
  EXPECT_TRUE(run_text(source, {}, {{"n", testing::int_arg(1)}}).ok);
  EXPECT_EQ(
      run_text(source, {}, {{"n", testing::int_arg(1000000)}}).errors,
      "2:9: AllocateGlobal 'w' of f32[1000000, 1000000] needs 4000000000000 bytes (3.64 TiB) of interpreter "
      "memory; the budget is 4294967296 bytes (4 GiB) (tilevm run --max-memory)\n");
  // The budget is an option.
  RunOptions small;
  small.max_memory = 1000;
  EXPECT_EQ(
      run(testing::parse_verified(source), {}, {{"n", testing::int_arg(1)}}, small).errors,
      "2:9: AllocateGlobal 'w' of f32[1, 1000000] needs 4000000 bytes (3.81 MiB) of interpreter memory; the "
      "budget is 1000 bytes (tilevm run --max-memory)\n");
  // A size past 2^63 is not wrapped into a small one.
  EXPECT_EQ(
      run_text("def k<1>[threads=4](i64 n):\n"
               "    w = AllocateGlobal(f32, shape=[n, n, n])\n",
               {}, {{"n", testing::int_arg(int64_t{1} << 32)}})
          .errors,
      "2:9: AllocateGlobal 'w' of f32[4294967296, 4294967296, 4294967296] needs more than 2^63 bytes of "
      "interpreter memory; the budget is 4294967296 bytes (4 GiB) (tilevm run --max-memory)\n");
}

TEST(InterpLimits, SharedAndRegisterTensorsCountAgainstTheBudget) {
  RunOptions small;
  small.max_memory = 4096;
  const std::string shared =
      "def k<1>[threads=4]():\n"
      "    s = AllocateShared(f32, shape=[256])\n";
  EXPECT_EQ(
      run(testing::parse_verified(shared), {}, {}, small).errors,
      "2:9: AllocateShared 's' of f32[256] needs 18688 bytes (18.2 KiB) of interpreter memory; the budget "
      "is 4096 bytes (4 KiB) (tilevm run --max-memory)\n");
  const std::string reg =
      "def k<1>[threads=4]():\n"
      "    x = AllocateRegister(f32, layout=spatial(4).local(1024), init=0.0)\n";
  EXPECT_EQ(run(testing::parse_verified(reg), {}, {}, small).errors,
            "2:9: a register tensor of f32[4096] (4 threads x 1024 slots) needs 36864 bytes (36 KiB) of "
            "interpreter memory; the budget is 4096 bytes (4 KiB) (tilevm run --max-memory)\n");
}

TEST(InterpLimits, AGridBeyondTheHardwareIsNotRun) {
  const std::string source =
      "def k<n, m>[threads=4](i64 n, i64 m):\n"
      "    pass\n";
  EXPECT_EQ(
      run_text(source, {}, {{"n", testing::int_arg(int64_t{1} << 31)}, {"m", testing::int_arg(1)}}).errors,
      "1:1: the grid [2147483648, 1] has extent 2147483648 in dimension x; a GPU launches at most "
      "2147483647\n");
  EXPECT_EQ(run_text(source, {}, {{"n", testing::int_arg(1)}, {"m", testing::int_arg(65536)}}).errors,
            "1:1: the grid [1, 65536] has extent 65536 in dimension y; a GPU launches at most 65535\n");
}

TEST(InterpLimits, AStepBudgetCutsOffARunThatWouldNotEnd) {
  const std::string forever =
      "def k<1>[threads=4](i32 n):\n"
      "    while n > 0:\n"
      "        n = n + 0\n";
  RunOptions budget;
  budget.max_steps = 1000;
  EXPECT_EQ(run(testing::parse_verified(forever), {}, {{"n", testing::int_arg(1)}}, budget).errors,
            "3:9: the run has taken more than 1000 steps, its budget (tilevm run --max-steps; a step is a "
            "statement executed or an element an instruction touches)\n");
  // Without a budget a run ends when the program does.
  EXPECT_TRUE(run(testing::parse_verified(forever), {}, {{"n", testing::int_arg(0)}}).ok);
  // Work on large tiles counts as well as statements: one Dot of 64 x 64 x 64 is 2^18 multiply-adds.
  const std::string dot =
      "def k<1>[threads=1]():\n"
      "    a = AllocateRegister(f32, layout=local(64, 64), init=1.0)\n"
      "    c = Dot(a, a, a)\n";
  budget.max_steps = int64_t{1} << 18;
  EXPECT_EQ(run(testing::parse_verified(dot), {}, {}, budget).errors,
            "3:9: the run has taken more than 262144 steps, its budget (tilevm run --max-steps; a step is a "
            "statement executed or an element an instruction touches)\n");
  budget.max_steps = int64_t{1} << 19;
  EXPECT_TRUE(run(testing::parse_verified(dot), {}, {}, budget).ok);
}

// A program with regions runs once per schedule (seven runs); the budget bounds them together. Each run
// of this one takes about 1000 steps, so 2000 let one run finish but not the seven (each run had its own
// budget once, and a fuzzer's input with regions took seven times the time the budget was meant to allow).
TEST(InterpLimits, TheStepBudgetBoundsAllTheSchedulesRunsTogether) {
  const std::string regions =
      "def k<1>[threads=256](i32 n):\n"
      "    with Warpgroups(0, 1):\n"
      "        for i in range(n):\n"
      "            x: i32 = i\n"
      "    with Warpgroups(1, 2):\n"
      "        pass\n";
  RunOptions budget;
  budget.max_steps = 2000;
  RunOptions one_schedule = budget;
  one_schedule.schedules = {Schedule{}};
  const ir::Program program = testing::parse_verified(regions);
  EXPECT_TRUE(run(program, {}, {{"n", testing::int_arg(400)}}, one_schedule).ok);
  const auto all = run(program, {}, {{"n", testing::int_arg(400)}}, budget);
  EXPECT_NE(all.errors.find("more than 2000 steps, its budget"), std::string::npos) << all.errors;
  budget.max_steps = 20000;
  EXPECT_TRUE(run(program, {}, {{"n", testing::int_arg(400)}}, budget).ok);
}

// A range whose next value passes the i64 range ends there, as range() does; the value once wrapped around
// into the range, and the loop never ended.
TEST(InterpLimits, ALoopEndsAtTheEndOfTheIntegerRange) {
  auto r = run_text(
      "def k<1>[threads=1]():\n"
      "    for i in range(9223372036854775800, 9223372036854775807, 4):\n"
      "        x: i64 = i\n"
      "        Print(x)\n");
  EXPECT_TRUE(r.ok) << r.errors;
  EXPECT_EQ(r.printed, "x = -8\nx = -4\n");
}

// The budget is checked before the layout's table (4 bytes a slot) is built: refusing this tensor of 2^27
// slots took 34 s and 530 MB at 842e291, spent building the table of a tensor the budget then refused.
TEST(InterpLimits, ARegisterTensorPastTheBudgetIsRefusedBeforeItsLayoutIsTabulated) {
  RunOptions small;
  small.max_memory = int64_t{64} << 20;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(
      run(testing::parse_verified("def k<1>[threads=1]():\n"
                                  "    x = AllocateRegister(f32, layout=local(8192, 16384), init=0.0)\n"),
          {}, {}, small)
          .errors,
      "2:9: a register tensor of f32[8192, 16384] (1 threads x 134217728 slots) needs 1207959552 bytes "
      "(1.12 GiB) of interpreter memory; the budget is 67108864 bytes (64 MiB) (tilevm run "
      "--max-memory)\n");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
}

}  // namespace
}  // namespace tilevm::interp
