// Register compute on the interpreter: rounding of elementwise results, Cast, View bit order, reductions
// across threads, control flow and Print.
#include <gtest/gtest.h>

#include <cmath>

#include "interp_test_util.h"

namespace tilevm::interp {
namespace {

using testing::run_text;

// Runs `body` (which computes register tensor r with layout spatial(4)) and stores r into out_ptr.
std::vector<double> compute4(const std::string& dtype, const std::vector<double>& in, const std::string& body,
                             const std::string& out_dtype = "") {
  const std::string od = out_dtype.empty() ? dtype : out_dtype;
  const DataType it = DataType::parse(dtype), ot = DataType::parse(od);
  std::vector<uint8_t> in_bytes = testing::pack_values(it, in);
  std::vector<uint8_t> out_bytes(in_bytes.size() * ot.bits() / it.bits() + 1, 0xee);
  auto r = run_text("def k<1>[threads=4](" + dtype + "* in_ptr, " + od + "* out_ptr):\n" +
                        "    g = ViewGlobal(in_ptr, dtype=" + dtype + ", shape=[4])\n" +
                        "    o = ViewGlobal(out_ptr, dtype=" + od + ", shape=[4])\n" +
                        "    x = LoadGlobal(g, layout=spatial(4))\n" + body + "    StoreGlobal(r, o)\n",
                    {{"in_ptr", &in_bytes}, {"out_ptr", &out_bytes}});
  EXPECT_TRUE(r.ok) << r.errors;
  return testing::unpack_values(ot, out_bytes, 4);
}

TEST(InterpCompute, FloatRoundingOverflowsToInfWhereThereIsOne) {
  auto r = compute4("f16", {65504, 1, -65504, 0.1}, "    r = Add(x, x)\n");
  EXPECT_EQ(r[0], INFINITY);
  EXPECT_EQ(r[1], 2);
  EXPECT_EQ(r[2], -INFINITY);
  EXPECT_EQ(r[3], decode(DataType::f16(),
                         encode(DataType::f16(), 2 * decode(DataType::f16(), encode(DataType::f16(), 0.1)))));
  // 65504 + 16 is exactly halfway to the next binade: rounds to inf (even); 65504 + 15 stays finite.
  auto h = compute4("f16", {65504, 65504, 1, 1}, "    r = Add(x, 15.0)\n");
  EXPECT_EQ(h[0], 65504);
  auto t = compute4("f16", {65504, 65504, 1, 1}, "    r = Add(x, 16.0)\n");
  EXPECT_EQ(t[0], INFINITY);
  // A finite-only type saturates.
  auto s = compute4("f4e2m1", {6, -6, 1, 0.5}, "    r = Mul(x, 3.0)\n");
  EXPECT_EQ(s, (std::vector<double>{6, -6, 3, 1.5}));
}

TEST(InterpCompute, IntegersWrap) {
  EXPECT_EQ(compute4("i8", {127, -128, 5, -1}, "    r = Add(x, 1)\n"),
            (std::vector<double>{-128, -127, 6, 0}));
  EXPECT_EQ(compute4("u4", {15, 0, 7, 3}, "    r = Sub(x, 1)\n"), (std::vector<double>{14, 15, 6, 2}));
  EXPECT_EQ(compute4("i32", {7, -7, 7, -7}, "    r = Div(x, 2)\n"), (std::vector<double>{3, -3, 3, -3}));
  EXPECT_EQ(compute4("i32", {7, -7, 7, -7}, "    r = Mod(x, 2)\n"), (std::vector<double>{1, -1, 1, -1}));
}

// Cast with layout=: each element keeps its value and moves to the slot the new layout gives it, which a View
// of the result as one word shows (bytes in slot order).
TEST(InterpCompute, CastWithLayoutReordersSlots) {
  // 2 x 4 blocks per thread: row-major to column-major slots is the renaming {0, 4, 1, 5, 2, 6, 3, 7}, which
  // is not its own inverse, so a renaming applied the wrong way round would show.
  std::vector<uint8_t> in(16), values(32, 0xee), words(16, 0xee);
  for (int i = 0; i < 16; ++i) in[static_cast<size_t>(i)] = static_cast<uint8_t>(i + 1);
  auto r = run_text(
      "def k<1>[threads=2](u8* in_ptr, f16* v_ptr, u32* w_ptr):\n"
      "    g = ViewGlobal(in_ptr, dtype=u8, shape=[2, 8])\n"
      "    x = LoadGlobal(g, layout=spatial(1, 2).local(2, 4))\n"
      "    y = Cast(x, dtype=u8, layout=spatial(1, 2).column_local(2, 4))\n"
      "    h = Cast(x, dtype=f16, layout=spatial(1, 2).column_local(2, 4))\n"
      "    gv = ViewGlobal(v_ptr, dtype=f16, shape=[2, 8])\n"
      "    StoreGlobal(h, gv)\n"
      "    w = View(y, dtype=u32, layout=spatial(2).local(2))\n"
      "    gw = ViewGlobal(w_ptr, dtype=u32, shape=[4])\n"
      "    StoreGlobal(w, gw)\n",
      {{"in_ptr", &in}, {"v_ptr", &values}, {"w_ptr", &words}});
  ASSERT_TRUE(r.ok) << r.errors;
  // Values by element: unchanged by the reordering.
  std::vector<double> expected_values(16);
  for (int i = 0; i < 16; ++i) expected_values[static_cast<size_t>(i)] = i + 1;
  EXPECT_EQ(testing::unpack_values(DataType::f16(), values, 16), expected_values);
  // Thread 0 holds columns 0-3, column-major: (0,0) (1,0) (0,1) (1,1) ... = 1 9 2 10 3 11 4 12; thread 1
  // columns 4-7: 5 13 6 14 7 15 8 16.
  EXPECT_EQ(words, (std::vector<uint8_t>{1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15, 8, 16}));
}

// Fma rounds a * b + c once: (1 + 2^-12)^2 - (1 + 2^-11) is exactly 2^-24, but the product alone rounds to
// 1 + 2^-11 (a tie, to even), so Mul then Add gives 0.
TEST(InterpCompute, FmaRoundsOnce) {
  const double a = 1 + std::ldexp(1.0, -12);  // 1.000244140625
  const std::string c = "    c = Mul(x, 0.0)\n    c = Sub(c, 1.00048828125)\n";
  auto fused = compute4("f32", {a, a, 2, -3}, c + "    r = Fma(x, x, c)\n");
  EXPECT_EQ(fused[0], std::ldexp(1.0, -24));
  EXPECT_EQ(fused[2], 4 - (1 + std::ldexp(1.0, -11)));
  auto twice = compute4("f32", {a, a, 2, -3}, c + "    p = Mul(x, x)\n    r = Add(p, c)\n");
  EXPECT_EQ(twice[0], 0.0);
}

TEST(InterpCompute, CastComparisonsWhere) {
  EXPECT_EQ(compute4("f32", {2.5, -3.5, 1000, -1000}, "    r = Cast(x, dtype=i8)\n", "i8"),
            (std::vector<double>{2, -4, 127, -128}));
  EXPECT_EQ(compute4("f32", {1, 2, 3, 4}, "    c = Lt(x, 2.5)\n    r = Where(c, x, 0.0)\n"),
            (std::vector<double>{1, 2, 0, 0}));
  EXPECT_EQ(compute4("f32", {1, 4, 9, 16}, "    r = Sqrt(x)\n    r = Max(r, 2.0)\n"),
            (std::vector<double>{2, 2, 3, 4}));
}

// Erf and Tanh: in double, rounded once to the tensor's type (f32 here), like Exp. The expected values are
// written out to 16 digits (so a wrong wiring, Erf computing tanh or the result left in double, fails),
// rounded to f32 the same way.
TEST(InterpCompute, ErfAndTanh) {
  const std::vector<double> x{-2.0, -0.5, 0.0, 1.25};
  const std::vector<double> erf{-0.9953222650189527, -0.5204998778130465, 0.0, 0.9229001282564582};
  const std::vector<double> tanh{-0.9640275800758169, -0.4621171572600098, 0.0, 0.8482836399575129};
  const std::vector<double> e = compute4("f32", x, "    r = Erf(x)\n");
  const std::vector<double> t = compute4("f32", x, "    r = Tanh(x)\n");
  for (size_t k = 0; k < x.size(); ++k) {
    EXPECT_EQ(e[k], static_cast<double>(static_cast<float>(erf[k]))) << x[k];
    EXPECT_EQ(t[k], static_cast<double>(static_cast<float>(tanh[k]))) << x[k];
  }
}

TEST(InterpCompute, ReduceAcrossThreadsReachesEveryReplica) {
  // spatial(4) reduced along dim 0: every thread holds the sum.
  EXPECT_EQ(compute4("f32", {1, 2, 3, 4.5}, "    s = ReduceSum(x, dim=0, keepdim=True)\n    r = Add(x, s)\n"),
            (std::vector<double>{11.5, 12.5, 13.5, 15}));
  EXPECT_EQ(compute4("i32", {1, -2, 30, 4}, "    s = ReduceMax(x, dim=0, keepdim=True)\n    r = Sub(x, s)\n"),
            (std::vector<double>{-29, -32, 0, -26}));
}

TEST(InterpCompute, ViewReadsEachThreadsBitStream) {
  // Each thread's u8 is two u4 slots, low nibble first; and back.
  std::vector<uint8_t> in = {0xa5, 0x3c, 0x01, 0xf0};
  std::vector<uint8_t> out(4, 0);
  auto r = run_text(
      "def k<1>[threads=4](u8* in_ptr, u4* out_ptr, u8* back_ptr):\n"
      "    g = ViewGlobal(in_ptr, dtype=u8, shape=[4])\n"
      "    o = ViewGlobal(out_ptr, dtype=u4, shape=[8])\n"
      "    b = ViewGlobal(back_ptr, dtype=u8, shape=[4])\n"
      "    x = LoadGlobal(g, layout=spatial(4))\n"
      "    y = View(x, dtype=u4, layout=spatial(4).local(2))\n"
      "    y1 = Add(y, 1)\n"
      "    StoreGlobal(y1, o)\n"
      "    z = View(y1, dtype=u8, layout=spatial(4))\n"
      "    StoreGlobal(z, b)\n",
      {{"in_ptr", &in}, {"out_ptr", &out}, {"back_ptr", &in}});
  ASSERT_TRUE(r.ok) << r.errors;
  // nibbles +1: a5 -> (6, b), 3c -> (d, 4), 01 -> (2, 1), f0 -> (1, 0)
  EXPECT_EQ(out, (std::vector<uint8_t>{0xb6, 0x4d, 0x12, 0x01}));
  EXPECT_EQ(in, (std::vector<uint8_t>{0xb6, 0x4d, 0x12, 0x01}));
}

TEST(InterpCompute, ControlFlowAndPrint) {
  auto r = run_text(
      "def k<1>[threads=2](i32 n):\n"
      "    total = 0\n"
      "    for i in range(10):\n"
      "        if i == 2:\n"
      "            continue\n"
      "        elif i >= n:\n"
      "            break\n"
      "        total = total + i\n"
      "    j = 0\n"
      "    while j * j < 50:\n"
      "        j = j + 1\n"
      "    Print(total)\n"
      "    Print(j)\n"
      "    x = AllocateRegister(f16, layout=spatial(2).local(3), init=0.5)\n"
      "    y = Mul(x, 3)\n"
      "    Print(y)\n"
      "    u = AllocateRegister(i4, layout=spatial(2))\n"
      "    Print(u)\n"
      "    s = AllocateShared(f32, shape=[2, 2])\n"
      "    Print(s)\n"
      "    return\n"
      "    Print(n)\n",
      {}, {{"n", testing::int_arg(6)}});
  ASSERT_TRUE(r.ok) << r.errors;
  EXPECT_EQ(r.printed,
            "total = 13\n"
            "j = 8\n"
            "y: register f16[6] layout=spatial(2).local(3)\n"
            "  [:] 1.5 1.5 1.5 1.5 1.5 1.5\n"
            "u: register i4[2] layout=spatial(2)\n"
            "  [:] ? ?\n"
            "s: shared f32[2, 2]\n"
            "  [0, :] ? ?\n"
            "  [1, :] ? ?\n");
}

TEST(InterpCompute, PrintNamesTheBlockInAGrid) {
  auto r = run_text(
      "def k<2, 2>[threads=1]():\n"
      "    a, b = BlockIndices()\n"
      "    if a == 1:\n"
      "        Exit()\n"
      "    v = a * 10 + b\n"
      "    Print(v)\n");
  ASSERT_TRUE(r.ok) << r.errors;
  EXPECT_EQ(r.printed, "block [0, 0]: v = 0\nblock [0, 1]: v = 1\n");
}

}  // namespace
}  // namespace tilevm::interp
