#include <gtest/gtest.h>

#include "expect_error.h"
#include "tilevm/layout/memory_layout.h"
#include "tilevm/support/error.h"

namespace tilevm::layout {
namespace {

TEST(SharedLayout, SwizzledOffsets) {
  SharedLayout s(make_swizzle(local({4, 4}), 1));
  // Row i is stored with its columns XOR-ed by i (the picture in memory_layout.h).
  int64_t expected[4][4] = {{0, 1, 2, 3}, {5, 4, 7, 6}, {10, 11, 8, 9}, {15, 14, 13, 12}};
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_EQ(s.offset({i, j}), expected[i][j]) << i << "," << j;
      EXPECT_EQ(s.index_at(expected[i][j]), (Index{i, j}));
    }
  }
}

TEST(SharedLayout, EveryOffsetOnceForThePaperLayouts) {
  // smem_layout_a and smem_layout_c of the VM paper's appendix B.
  Layout a = compose(compose(local({3, 1, 1}), make_swizzle(local({16, 32}), 1)), local({1, 8}));
  Layout c = compose(compose(local({1, 2}), make_swizzle(local({16, 4}), 1, 1)), local({1, 8}));
  for (const Layout& l : {a, c}) {
    SharedLayout s(l);
    std::vector<int> seen(static_cast<size_t>(s.size()), 0);
    for (int64_t k = 0; k < s.size(); ++k) ++seen[static_cast<size_t>(s.offset(s.index_at(k)))];
    for (int v : seen) EXPECT_EQ(v, 1);
  }
  EXPECT_EQ(SharedLayout(a).shape(), (Index{3, 16, 256}));
}

// Only a layout of several threads can replicate (local slots merge), so the thread check is the one that
// rejects a replicated layout: replication never reaches the constructor's own replication check.
TEST(SharedLayout, RejectsThreadsAndSoReplication) {
  expect_error([&] { SharedLayout(spatial({2})); }, "must have one thread, but this one has 2");
  const Layout replicated = reduce(spatial({2, 2}), {0});
  ASSERT_TRUE(replicated.is_replicated());
  expect_error([&] { SharedLayout{replicated}; }, "must have one thread, but this one has 4");
  EXPECT_FALSE(reduce(local({2, 2}), {0}).is_replicated());
  EXPECT_EQ(SharedLayout(reduce(local({2, 2}), {0})).size(), 2);  // local slots merge: no replication
}

TEST(GlobalLayout, StridesAndExtent) {
  GlobalLayout g = GlobalLayout::row_major({3, 4, 5});
  EXPECT_EQ(*g.strides(), (Index{20, 5, 1}));
  EXPECT_EQ(g.offset({1, 2, 3}), 33);
  EXPECT_EQ(g.extent(), 60);
  GlobalLayout t = GlobalLayout::strided({4, 8}, {1, 16});
  EXPECT_EQ(t.offset({3, 2}), 35);
  EXPECT_EQ(t.extent(), 3 + 7 * 16 + 1);
  expect_error([&] { GlobalLayout::strided({4, 8}, {1}); }, "do not match shape [4, 8]: rank 1 vs 2");
  GlobalLayout l = GlobalLayout::from_layout(column_local({4, 8}));
  EXPECT_EQ(l.offset({3, 2}), 11);
  EXPECT_EQ(l.extent(), 32);
}

}  // namespace
}  // namespace tilevm::layout
