// slot_permutation: the per-thread slot renaming between two layouts that hold the same elements.
#include <gtest/gtest.h>

#include "tilevm/layout/layout_text.h"
#include "tilevm/layout/slot_permutation.h"

namespace tilevm::layout {
namespace {

SlotPermutation between(const std::string& from, const std::string& to) {
  return slot_permutation(parse_layout(from), parse_layout(to));
}

TEST(SlotPermutation, RowAndColumnMajorSlots) {
  const SlotPermutation p = between("column_local(2, 2)", "local(2, 2)");
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.slots, (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(between("local(2, 2)", "local(2, 2)").slots, (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(SlotPermutation, SameForEveryThreadAcrossSpatialFactors) {
  // The pair index moved outwards past two slots, as the quantized matmul stores 4-bit codes.
  const SlotPermutation p = between("spatial(4, 1, 1).local(1, 2, 1).local(1, 1, 2).column_local(2, 2, 1)",
                                    "spatial(4, 1, 1).local(1, 2, 1).column_local(2, 2, 1).local(1, 1, 2)");
  ASSERT_EQ(p.error, "");
  // Target slot 2c + l (c = pair, l = half) is source slot 4l + c, per 8-slot word.
  EXPECT_EQ(p.slots, (std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15}));
}

// A swizzle can give two threads the same elements in different slot orders: no renaming of registers
// serves both.
TEST(SlotPermutation, ThreadDependentOrdersAreRejected) {
  EXPECT_EQ(between("spatial(2, 1).local(1, 2)", "swizzle(spatial(2, 1).local(1, 2), dim=1)").error,
            "the slot order differs between threads: slot 0 of the new layout is slot 0 of the operand's in "
            "thread 0 but slot 1 in thread 1");
}

TEST(SlotPermutation, ErrorsNameTheValues) {
  EXPECT_EQ(between("local(2, 2)", "local(4)").error, "the shapes differ: [2, 2] and [4]");
  EXPECT_EQ(between("local(2, 2).spatial(1, 2)", "local(2, 4)").error,
            "2 threads x 4 slots against 1 threads x 8 slots");
  EXPECT_EQ(between("local(2, 2).spatial(2, 2)", "spatial(2, 2).local(2, 2)").error,
            "thread 0 holds (0, 1) in slot 1 of the new layout but not in the operand's");
}

}  // namespace
}  // namespace tilevm::layout
