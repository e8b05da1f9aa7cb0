// Program errors the interpreter reports instead of computing silently wrong results.
#include <gtest/gtest.h>

#include "interp_test_util.h"

namespace tilevm::interp {
namespace {

using testing::run_text;

TEST(InterpErrors, UninitializedRegister) {
  auto r = run_text(
      "def k<1>[threads=2]():\n"
      "    x = AllocateRegister(f32, layout=spatial(2).local(2))\n"
      "    y = Add(x, 1.0)\n");
  EXPECT_EQ(r.errors, "3:9: read of uninitialized register tensor 'x' element [0] (thread 0, slot 0)\n");
}

TEST(InterpErrors, UninitializedShared) {
  auto r = run_text(
      "def k<1>[threads=4]():\n"
      "    s = AllocateShared(f32, shape=[2, 2])\n"
      "    x = LoadShared(s, layout=spatial(2, 2))\n");
  EXPECT_EQ(r.errors, "3:9: read of uninitialized shared 's' element [0, 0]\n");
}

TEST(InterpErrors, UninitializedWorkspace) {
  auto r = run_text(
      "def k<1>[threads=4]():\n"
      "    w = AllocateGlobal(f32, shape=[4])\n"
      "    x = LoadGlobal(w, layout=spatial(4))\n");
  EXPECT_EQ(r.errors, "3:9: read of uninitialized global 'w' element at offset 0\n");
  auto ok = run_text(
      "def k<1>[threads=4]():\n"
      "    w = AllocateGlobal(f32, shape=[4], init=0.0)\n"
      "    x = LoadGlobal(w, layout=spatial(4))\n");
  EXPECT_TRUE(ok.ok) << ok.errors;
}

TEST(InterpErrors, SharedOutOfBounds) {
  const std::string prog =
      "def k<1>[threads=4](i32 row):\n"
      "    s = AllocateShared(f32, shape=[2, 2])\n"
      "    x = AllocateRegister(f32, layout=spatial(2, 2), init=1.0)\n"
      "    StoreShared(x, s, offset=[row, 0])\n";
  EXPECT_TRUE(run_text(prog, {}, {{"row", testing::int_arg(0)}}).ok);
  auto r = run_text(prog, {}, {{"row", testing::int_arg(1)}});
  EXPECT_EQ(r.errors, "4:5: write of shared 's' element [2, 0] is out of bounds (shape [2, 2])\n");
}

TEST(InterpErrors, GlobalOutsideTheViewReadsZeroOutsideTheBufferFails) {
  std::vector<uint8_t> in = testing::pack_values(DataType::f32(), {1, 2, 3});
  std::vector<uint8_t> out = testing::pack_values(DataType::f32(), {-1, -1, -1, -1});
  // The view is [3]: the fourth element reads 0; the store of the fourth is dropped.
  auto ok = run_text(
      "def k<1>[threads=4](f32* in_ptr, f32* out_ptr):\n"
      "    g = ViewGlobal(in_ptr, dtype=f32, shape=[3])\n"
      "    o = ViewGlobal(out_ptr, dtype=f32, shape=[3])\n"
      "    x = LoadGlobal(g, layout=spatial(4))\n"
      "    x = Add(x, 10.0)\n"
      "    StoreGlobal(x, o)\n",
      {{"in_ptr", &in}, {"out_ptr", &out}});
  ASSERT_TRUE(ok.ok) << ok.errors;
  EXPECT_EQ(testing::unpack_values(DataType::f32(), out, 4), (std::vector<double>{11, 12, 13, -1}));
  // A view larger than its buffer.
  auto bad = run_text(
      "def k<1>[threads=4](f32* in_ptr):\n"
      "    g = ViewGlobal(in_ptr, dtype=f32, shape=[4])\n"
      "    x = LoadGlobal(g, layout=spatial(4))\n",
      {{"in_ptr", &in}});
  EXPECT_EQ(bad.errors,
            "3:9: read of global 'in_ptr' element [3] is at element 3, outside its buffer of 3 f32 elements "
            "(view shape [4], strides [1])\n");
}

TEST(InterpErrors, MissingArguments) {
  auto r = run_text("def k<1>[threads=1](f32* p, i32 n):\n    Synchronize()\n");
  EXPECT_EQ(r.errors, "1:26: no buffer was given for the pointer parameter 'p'\n");
}

TEST(InterpErrors, ErrorInALaterBlockNamesIt) {
  auto r = run_text(
      "def k<3>[threads=1]():\n"
      "    b = BlockIndices()\n"
      "    x = 4 / (2 - b)\n");
  EXPECT_EQ(r.errors, "3:9: integer division by zero ('/' with a zero divisor)\n");
  EXPECT_EQ(r.notes, "3:9: in block [2]\n");
}

TEST(InterpErrors, ExitStopsTheBlock) {
  auto r = run_text(
      "def k<1>[threads=4]():\n"
      "    x = AllocateRegister(f32, layout=spatial(4))\n"
      "    Exit()\n"
      "    y = Add(x, 1.0)\n");
  EXPECT_TRUE(r.ok) << r.errors;
}

}  // namespace
}  // namespace tilevm::interp
