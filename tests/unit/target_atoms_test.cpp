// The fragment layouts of target/atoms.h against the PTX ISA's fragment tables ("Matrix Fragments for
// mma.m16n8k16" and "for mma.m16n8k32", and ldmatrix), transcribed here as the ISA states them.
#include <gtest/gtest.h>

#include "expect_error.h"
#include "tilevm/support/error.h"
#include "tilevm/target/atoms.h"

namespace tilevm::target {
namespace {

using layout::Index;
using layout::Layout;

struct Fragment {
  int64_t rows, cols, elements;  // per thread
  Index (*position)(int64_t lane, int64_t i);
};

// m16n8k16, .f16/.bf16 A: row = groupID (+8 for a2, a3, a6, a7); col = tig*2 + (i & 1) (+8 for a4..a7).
Index a_k16(int64_t lane, int64_t i) {
  int64_t group = lane >> 2, tig = lane % 4;
  int64_t row = (i < 2 || (i >= 4 && i < 6)) ? group : group + 8;
  int64_t col = tig * 2 + (i & 1) + (i < 4 ? 0 : 8);
  return {row, col};
}
// B: row = tig*2 + (i & 1) (+8 for b2, b3); col = groupID.
Index b_k16(int64_t lane, int64_t i) {
  return {(lane % 4) * 2 + (i & 1) + (i < 2 ? 0 : 8), lane >> 2};
}
// C/D (f32 and f16, and s32 of m16n8k32): row = groupID (+8 for c2, c3); col = tig*2 + (i & 1).
Index c_m16n8(int64_t lane, int64_t i) {
  return {(lane >> 2) + (i < 2 ? 0 : 8), (lane % 4) * 2 + (i & 1)};
}
// m16n8k32, .s8/.u8 A: row = groupID (+8 for a4..a7, a12..a15); col = tig*4 + (i & 3) (+16 for a8..a15).
Index a_k32(int64_t lane, int64_t i) {
  int64_t group = lane >> 2, tig = lane % 4;
  int64_t row = (i < 4 || (i >= 8 && i < 12)) ? group : group + 8;
  return {row, tig * 4 + (i & 3) + (i < 8 ? 0 : 16)};
}
// B: row = tig*4 + (i & 3) (+16 for b4..b7); col = groupID.
Index b_k32(int64_t lane, int64_t i) {
  return {(lane % 4) * 4 + (i & 3) + (i < 4 ? 0 : 16), lane >> 2};
}

void expect_fragment(const Layout& layout, const Fragment& f, const std::string& what) {
  ASSERT_EQ(layout.shape(), (Index{f.rows, f.cols})) << what;
  ASSERT_EQ(layout.num_threads(), 32) << what;
  ASSERT_EQ(layout.num_locals(), f.elements) << what;
  for (int64_t lane = 0; lane < 32; ++lane) {
    for (int64_t i = 0; i < f.elements; ++i) {
      EXPECT_EQ(layout.map(lane, i), f.position(lane, i)) << what << " lane " << lane << " element " << i;
    }
  }
}

TEST(TargetAtoms, MmaFragmentsMatchThePtxTables) {
  ASSERT_EQ(mma_atoms().size(), 5u);
  for (const MmaAtom& atom : mma_atoms()) {
    if (atom.k == 16) {
      expect_fragment(atom.layout_a, {16, 16, 8, a_k16}, atom.name + " A");
      expect_fragment(atom.layout_b, {16, 8, 4, b_k16}, atom.name + " B");
    } else {
      ASSERT_EQ(atom.k, 32);
      expect_fragment(atom.layout_a, {16, 32, 16, a_k32}, atom.name + " A");
      expect_fragment(atom.layout_b, {32, 8, 8, b_k32}, atom.name + " B");
    }
    expect_fragment(atom.layout_c, {16, 8, 4, c_m16n8}, atom.name + " C");
  }
}

TEST(TargetAtoms, MmaNames) {
  EXPECT_EQ(mma_atoms()[0].name, "mma.m16n8k16.f32.f16.f16.f32");
  EXPECT_EQ(mma_atoms()[2].name, "mma.m16n8k16.f32.bf16.bf16.f32");
  EXPECT_EQ(mma_atoms()[3].name, "mma.m16n8k32.s32.s8.s8.s32");
}

// ldmatrix: thread t receives, for matrix j in register j, the elements (t / 4, 2 * (t % 4)) and the next
// column of that matrix. Matrices are placed down the rows first (row_blocks of them), then across the
// columns.
TEST(TargetAtoms, LdmatrixFragmentsMatchThePtxTable) {
  // x1, x2 (down the rows), x4 (2 x 2, mma's A order) and x4 with the matrices side by side.
  const int64_t expected_row_blocks[] = {1, 2, 2, 1};
  ASSERT_EQ(ldmatrix_atoms().size(), 4u);
  for (size_t a = 0; a < ldmatrix_atoms().size(); ++a) {
    const LdmatrixAtom& atom = ldmatrix_atoms()[a];
    int64_t n = atom.num_matrices;
    const int64_t row_blocks = expected_row_blocks[a], col_blocks = n / row_blocks;
    EXPECT_EQ(atom.row_blocks(), row_blocks);
    const Layout& l = atom.layout;
    ASSERT_EQ(l.shape(), (Index{8 * row_blocks, 8 * col_blocks}));
    ASSERT_EQ(l.num_threads(), 32);
    ASSERT_EQ(l.num_locals(), 2 * n);
    for (int64_t t = 0; t < 32; ++t) {
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t e = 0; e < 2; ++e) {
          Index expected{(j % row_blocks) * 8 + t / 4, (j / row_blocks) * 8 + 2 * (t % 4) + e};
          EXPECT_EQ(l.map(t, 2 * j + e), expected) << "x" << n << " thread " << t << " matrix " << j;
        }
      }
    }
  }
  // ldmatrix.x4 delivers exactly mma.m16n8k16's A fragment, so A tiles load with one instruction.
  EXPECT_EQ(ldmatrix_atoms()[2].layout, mma_atoms()[0].layout_a);
}

// Instruction selection by division: the accumulator of a 64x32 warp tile divides by the mma C atom.
TEST(TargetAtoms, WarpTileDividesByTheAccumulatorAtom) {
  using namespace layout;
  Layout tile = compose(compose(local({4, 4}), local({2, 1})), compose(spatial({8, 4}), local({1, 2})));
  Layout quotient = divide(tile, mma_atoms()[0].layout_c);
  EXPECT_EQ(quotient, local({4, 4}));
  // The same size, but the modes in other roles and order: not a multiple of the atom.
  const Layout other = compose(spatial({8, 4}), local({2, 2}));
  expect_error([&] { divide(other, mma_atoms()[0].layout_c); }, "its inner part is not the divisor");
}

}  // namespace
}  // namespace tilevm::target
