// target::select_mma: the one MMA rule of the verifier and the emitter (target/mma_selection.h), checked on
// the cases that separate its outcomes: no atom, not held, held but not warp-uniform, held and uniform.
#include <gtest/gtest.h>

#include "tilevm/target/mma_selection.h"

namespace tilevm::target {
namespace {

using layout::compose;
using layout::Layout;
using layout::local;
using layout::replicate;
using layout::spatial;

const MmaAtom& atom_f16_f32() {
  return mma_atoms()[0];
}

TEST(TargetMmaSelection, TheAtomFragmentsThemselvesAreOneStep) {
  const MmaAtom& atom = atom_f16_f32();
  auto sel = select_mma(DataType::f16(), DataType::f16(), DataType::f32(), atom.layout_a, atom.layout_b,
                        atom.layout_c);
  ASSERT_TRUE(sel.has_value());
  EXPECT_EQ(sel->atom, &atom);
  EXPECT_TRUE(sel->warp_uniform);
  EXPECT_EQ(sel->qc.num_threads(), 1);
  ASSERT_EQ(sel->steps.size(), 1u);
  EXPECT_EQ(sel->steps[0], (std::array<int64_t, 3>{0, 0, 0}));
}

TEST(TargetMmaSelection, TheOperandTypesPickTheAtom) {
  const MmaAtom& s8 = mma_atoms()[3];
  auto sel =
      select_mma(DataType::i8(), DataType::i8(), DataType::i32(), s8.layout_a, s8.layout_b, s8.layout_c);
  ASSERT_TRUE(sel.has_value());
  EXPECT_EQ(sel->atom->name, "mma.m16n8k32.s32.s8.s8.s32");
  // The f16 fragments with f32 inputs, or with an i32 accumulator: no atom has those types.
  const MmaAtom& f16 = atom_f16_f32();
  EXPECT_FALSE(select_mma(DataType::f32(), DataType::f32(), DataType::f32(), f16.layout_a, f16.layout_b,
                          f16.layout_c));
  EXPECT_FALSE(select_mma(DataType::f16(), DataType::f16(), DataType::i32(), f16.layout_a, f16.layout_b,
                          f16.layout_c));
}

TEST(TargetMmaSelection, ALayoutThatDoesNotDivideSelectsNothing) {
  const MmaAtom& atom = atom_f16_f32();
  // 16x16 with every thread holding a 2x4 block: not the A fragment.
  Layout a = compose(spatial({8, 4}), local({2, 4}));
  EXPECT_FALSE(
      select_mma(DataType::f16(), DataType::f16(), DataType::f32(), a, atom.layout_b, atom.layout_c));
}

// Two warps split M, K = 32 (two k steps), N = 16 (two result atoms per warp); b is held by both warps.
TEST(TargetMmaSelection, WarpsSplittingMGiveAUniformSchedule) {
  const MmaAtom& atom = atom_f16_f32();
  Layout a = compose(compose(spatial({2, 1}), local({1, 2})), atom.layout_a);  // [32, 32]
  Layout b = compose(compose(replicate(2), local({2, 2})), atom.layout_b);     // [32, 16]
  Layout c = compose(compose(spatial({2, 1}), local({1, 2})), atom.layout_c);  // [32, 16]
  auto sel = select_mma(DataType::f16(), DataType::f16(), DataType::f32(), a, b, c);
  ASSERT_TRUE(sel.has_value());
  EXPECT_TRUE(sel->warp_uniform);
  EXPECT_EQ(sel->qc.num_threads(), 2);
  // k outer, result slot inner: a's slot is k, b's slot is 2k + n.
  std::vector<std::array<int64_t, 3>> expected = {{0, 0, 0}, {1, 0, 1}, {0, 1, 2}, {1, 1, 3}};
  EXPECT_EQ(sel->steps, expected);
}

// a replicated over the two warps holds both M blocks in slots 0 and 1 of every warp: warp 0 needs slot 0
// and warp 1 slot 1. Valid for the verifier, SIMT for the emitter.
TEST(TargetMmaSelection, OperandsInWarpDependentSlotsAreHeldButNotUniform) {
  const MmaAtom& atom = atom_f16_f32();
  Layout a = compose(compose(replicate(2), local({2, 1})), atom.layout_a);  // [32, 16]
  Layout b = compose(replicate(2), atom.layout_b);                          // [16, 8]
  Layout c = compose(spatial({2, 1}), atom.layout_c);                       // [32, 8]
  auto sel = select_mma(DataType::f16(), DataType::f16(), DataType::f32(), a, b, c);
  ASSERT_TRUE(sel.has_value());
  EXPECT_FALSE(sel->warp_uniform);
  EXPECT_TRUE(sel->steps.empty());
}

// Warp w computes M block w and both N blocks, but holds only N block w of b.
TEST(TargetMmaSelection, AWarpMissingAnOperandAtomSelectsNothing) {
  const MmaAtom& atom = atom_f16_f32();
  Layout a = compose(spatial({2, 1}), atom.layout_a);                          // [32, 16]
  Layout b = compose(spatial({1, 2}), atom.layout_b);                          // [16, 16]
  Layout c = compose(compose(spatial({2, 1}), local({1, 2})), atom.layout_c);  // [32, 16]
  EXPECT_FALSE(select_mma(DataType::f16(), DataType::f16(), DataType::f32(), a, b, c));
  // The same with b held by both warps is tensor-core work.
  Layout b_all = compose(compose(replicate(2), local({1, 2})), atom.layout_b);
  EXPECT_TRUE(select_mma(DataType::f16(), DataType::f16(), DataType::f32(), a, b_all, c));
}

// MmaDetail::HeldOnly (the verifier's question, decided on the quotients' modes) agrees with the walk of
// the full selection on every triple of warp arrangements of shape [2, 2] over 2 and over 4 warps,
// replicated ones among them, around the f16 atom's fragments.
TEST(TargetMmaSelection, HeldOnlyAgreesWithTheWalk) {
  const MmaAtom& atom = atom_f16_f32();
  const std::vector<Layout> parts = {local({2, 1}), local({1, 2}),   spatial({2, 1}), spatial({1, 2}),
                                     local({2, 2}), spatial({2, 2}), replicate(2)};
  int held = 0, not_held = 0;
  for (int64_t threads : {2, 4}) {
    std::vector<Layout> warps;
    auto keep = [&](const Layout& q) {
      if (q.shape() != layout::Index{2, 2} || q.num_threads() != threads) return;
      for (const Layout& w : warps)
        if (w == q) return;
      warps.push_back(q);
    };
    for (const Layout& f : parts)
      for (const Layout& g : parts) {
        keep(compose(f, g));
        for (const Layout& h : parts) keep(compose(f, g, h));
      }
    ASSERT_GE(warps.size(), 4u);
    for (const Layout& qa : warps)
      for (const Layout& qb : warps)
        for (const Layout& qc : warps) {
          const Layout a = compose(qa, atom.layout_a), b = compose(qb, atom.layout_b),
                       c = compose(qc, atom.layout_c);
          const bool walk =
              select_mma(DataType::f16(), DataType::f16(), DataType::f32(), a, b, c).has_value();
          const bool modes =
              select_mma(DataType::f16(), DataType::f16(), DataType::f32(), a, b, c, MmaDetail::HeldOnly)
                  .has_value();
          ASSERT_EQ(walk, modes);
          (walk ? held : not_held) += 1;
        }
  }
  EXPECT_GT(held, 10);
  EXPECT_GT(not_held, 10);
}

}  // namespace
}  // namespace tilevm::target
