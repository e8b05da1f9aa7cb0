// The race checker and the async-copy rules (docs/language.md section 7): each test runs a small program once
// with the synchronization it needs (no error, right values) and once without it (the exact report).
#include <gtest/gtest.h>

#include "interp_test_util.h"

namespace tilevm::interp {
namespace {

using testing::run_text;

// 4 threads: StoreShared writes s[i, j] from thread 2i + j, the load reads it in thread i + 2j.
std::string store_then_load(bool sync) {
  return std::string(
             "def k<1>[threads=4](f32* out_ptr):\n"
             "    s = AllocateShared(f32, shape=[2, 2])\n"
             "    x = AllocateRegister(f32, layout=spatial(2, 2), init=3.0)\n"
             "    StoreShared(x, s)\n") +
         (sync ? "    Synchronize()\n" : "    # no Synchronize\n") +
         "    y = LoadShared(s, layout=column_spatial(2, 2))\n"
         "    g = ViewGlobal(out_ptr, dtype=f32, shape=[2, 2])\n"
         "    StoreGlobal(y, g)\n";
}

TEST(InterpRace, ReadAfterWrite) {
  std::vector<uint8_t> out = testing::pack_values(DataType::f32(), {-1, -1, -1, -1});
  auto ok = run_text(store_then_load(true), {{"out_ptr", &out}});
  EXPECT_TRUE(ok.ok) << ok.errors;
  EXPECT_EQ(testing::unpack_values(DataType::f32(), out, 4), (std::vector<double>{3, 3, 3, 3}));
  auto bad = run_text(store_then_load(false), {{"out_ptr", &out}});
  EXPECT_EQ(
      bad.errors,
      "6:9: read-after-write race on shared 's' element [1, 0]: thread 1 reads it, thread 2 wrote it at 4:5 "
      "with no Synchronize() in between\n");
  EXPECT_EQ(bad.notes, "");  // a grid of one block names no block
}

TEST(InterpRace, WriteAfterRead) {
  const std::string head =
      "def k<1>[threads=4]():\n"
      "    s = AllocateShared(f32, shape=[2, 2])\n"
      "    x = AllocateRegister(f32, layout=spatial(2, 2), init=3.0)\n"
      "    StoreShared(x, s)\n"
      "    Synchronize()\n"
      "    y = LoadShared(s, layout=spatial(2, 2))\n";
  const std::string store_other = "    z = AllocateRegister(f32, layout=column_spatial(2, 2), init=1.0)\n";
  auto ok = run_text(head + store_other + "    Synchronize()\n    StoreShared(z, s)\n");
  EXPECT_TRUE(ok.ok) << ok.errors;
  auto bad = run_text(head + store_other + "    StoreShared(z, s)\n");
  EXPECT_EQ(
      bad.errors,
      "8:5: write-after-read race on shared 's' element [1, 0]: thread 1 writes it, thread 2 read it at 6:9 "
      "with no Synchronize() in between\n");
}

TEST(InterpRace, WriteAfterWrite) {
  const std::string head =
      "def k<1>[threads=4]():\n"
      "    s = AllocateShared(f32, shape=[2, 2])\n"
      "    x = AllocateRegister(f32, layout=spatial(2, 2), init=3.0)\n"
      "    z = AllocateRegister(f32, layout=column_spatial(2, 2), init=1.0)\n"
      "    StoreShared(x, s)\n";
  EXPECT_TRUE(run_text(head + "    Synchronize()\n    StoreShared(z, s)\n").ok);
  auto bad = run_text(head + "    StoreShared(z, s)\n");
  EXPECT_EQ(bad.errors,
            "6:5: write-after-write race on shared 's' element [1, 0]: thread 1 writes it, thread 2 wrote it "
            "at 5:5 "
            "with no Synchronize() in between\n");
}

TEST(InterpRace, SameThreadNeedsNoSynchronize) {
  // Every thread reads back only what it wrote itself.
  auto r = run_text(
      "def k<1>[threads=4]():\n"
      "    s = AllocateShared(f32, shape=[2, 2])\n"
      "    x = AllocateRegister(f32, layout=spatial(2, 2), init=3.0)\n"
      "    StoreShared(x, s)\n"
      "    y = LoadShared(s, layout=spatial(2, 2))\n"
      "    StoreShared(y, s)\n");
  EXPECT_TRUE(r.ok) << r.errors;
}

TEST(InterpRace, ReplicatedStoreIsOneWrite) {
  // Threads t and t + 2 write the same element in one instruction: not a race; the other threads read it
  // after a Synchronize.
  auto r = run_text(
      "def k<1>[threads=4]():\n"
      "    s = AllocateShared(f32, shape=[2])\n"
      "    x = AllocateRegister(f32, layout=replicate(2).spatial(2), init=3.0)\n"
      "    StoreShared(x, s)\n"
      "    StoreShared(x, s)\n");
  EXPECT_EQ(r.errors,
            "5:5: write-after-write race on shared 's' element [0]: thread 0 writes it, several threads "
            "wrote it at "
            "4:5 with no Synchronize() in between\n");
  auto ok = run_text(
      "def k<1>[threads=4]():\n"
      "    s = AllocateShared(f32, shape=[2])\n"
      "    x = AllocateRegister(f32, layout=replicate(2).spatial(2), init=3.0)\n"
      "    StoreShared(x, s)\n"
      "    Synchronize()\n"
      "    y = LoadShared(s, layout=spatial(2).replicate(2))\n");
  EXPECT_TRUE(ok.ok) << ok.errors;
}

// CopyAsync of a 2 x 2 global tile into s.
std::string copy_program(const std::string& after_issue) {
  return "def k<1>[threads=4](f32* in_ptr, f32* out_ptr):\n"
         "    g = ViewGlobal(in_ptr, dtype=f32, shape=[2, 2])\n"
         "    s = AllocateShared(f32, shape=[2, 2])\n"
         "    CopyAsync(s, g)\n"
         "    CopyAsyncCommitGroup()\n" +
         after_issue +
         "    y = LoadShared(s, layout=spatial(2, 2))\n"
         "    o = ViewGlobal(out_ptr, dtype=f32, shape=[2, 2])\n"
         "    StoreGlobal(y, o)\n";
}

TEST(InterpAsyncCopy, ReadBeforeWait) {
  std::vector<uint8_t> in = testing::pack_values(DataType::f32(), {1, 2, 3, 4});
  std::vector<uint8_t> out = testing::pack_values(DataType::f32(), {0, 0, 0, 0});
  auto bad = run_text(copy_program(""), {{"in_ptr", &in}, {"out_ptr", &out}});
  EXPECT_EQ(bad.errors,
            "6:9: read of shared 's' element [0, 0] before its CopyAsync group was waited (issued at 4:5)\n");
  // Waited but not synchronized: the data was written by the copy unit, not by the reading thread.
  auto racy = run_text(copy_program("    CopyAsyncWaitGroup(0)\n"), {{"in_ptr", &in}, {"out_ptr", &out}});
  EXPECT_EQ(racy.errors,
            "7:9: read-after-write race on shared 's' element [0, 0]: thread 0 reads it, a CopyAsync wrote "
            "it at 4:5 "
            "with no Synchronize() in between\n");
  auto ok = run_text(copy_program("    CopyAsyncWaitGroup(0)\n    Synchronize()\n"),
                     {{"in_ptr", &in}, {"out_ptr", &out}});
  EXPECT_TRUE(ok.ok) << ok.errors;
  EXPECT_EQ(testing::unpack_values(DataType::f32(), out, 4), (std::vector<double>{1, 2, 3, 4}));
}

TEST(InterpAsyncCopy, WaitLeavesTheNewestGroups) {
  // Two groups; CopyAsyncWaitGroup(1) lands only the first (row 0).
  std::vector<uint8_t> in = testing::pack_values(DataType::f32(), {1, 2, 3, 4});
  const std::string head =
      "def k<1>[threads=4](f32* in_ptr):\n"
      "    g = ViewGlobal(in_ptr, dtype=f32, shape=[2, 2])\n"
      "    s = AllocateShared(f32, shape=[2, 2])\n"
      "    CopyAsync(s[0], g[0])\n"
      "    CopyAsyncCommitGroup()\n"
      "    CopyAsync(s[1], g[1])\n"
      "    CopyAsyncCommitGroup()\n"
      "    CopyAsyncWaitGroup(1)\n"
      "    Synchronize()\n";
  auto first = run_text(head + "    y = LoadShared(s, layout=replicate(2).spatial(2), offset=[0, 0])\n",
                        {{"in_ptr", &in}});
  EXPECT_TRUE(first.ok) << first.errors;
  auto second = run_text(head + "    y = LoadShared(s, layout=replicate(2).spatial(2), offset=[1, 0])\n",
                         {{"in_ptr", &in}});
  EXPECT_EQ(
      second.errors,
      "10:9: read of shared 's' element [1, 0] before its CopyAsync group was waited (issued at 6:5)\n");
}

TEST(InterpAsyncCopy, IssueChecksReaders) {
  std::vector<uint8_t> in = testing::pack_values(DataType::f32(), {1, 2, 3, 4});
  const std::string prog =
      "def k<1>[threads=4](f32* in_ptr):\n"
      "    g = ViewGlobal(in_ptr, dtype=f32, shape=[2, 2])\n"
      "    s = AllocateShared(f32, shape=[2, 2])\n"
      "    CopyAsync(s, g)\n"
      "    CopyAsyncCommitGroup()\n"
      "    CopyAsyncWaitGroup(0)\n"
      "    Synchronize()\n"
      "    y = LoadShared(s, layout=spatial(2, 2))\n";
  EXPECT_TRUE(run_text(prog + "    Synchronize()\n    CopyAsync(s, g)\n", {{"in_ptr", &in}}).ok);
  auto bad = run_text(prog + "    CopyAsync(s, g)\n", {{"in_ptr", &in}});
  EXPECT_EQ(bad.errors,
            "9:5: write-after-read race on shared 's' element [0, 0]: a CopyAsync writes it, thread 0 read "
            "it at 8:9 "
            "with no Synchronize() in between\n");
}

TEST(InterpRace, CheckCanBeTurnedOff) {
  RunOptions options;
  options.check_races = false;
  std::vector<uint8_t> out = testing::pack_values(DataType::f32(), {-1, -1, -1, -1});
  auto r = testing::run(testing::parse_verified(store_then_load(false)), {{"out_ptr", &out}}, {}, options);
  EXPECT_TRUE(r.ok) << r.errors;
}

}  // namespace
}  // namespace tilevm::interp
