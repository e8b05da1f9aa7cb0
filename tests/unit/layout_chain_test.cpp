// The C++ chain of layouts (layout.h): `a * b * c` and compose(a, b, c) are the nested compose and the text
// form `a.b.c`, for the chains the kernels use.
#include <gtest/gtest.h>

#include "tilevm/layout/layout.h"
#include "tilevm/layout/layout_text.h"

namespace tilevm::layout {
namespace {

TEST(LayoutChain, ProductIsTheNestedComposeAndTheText) {
  const Layout chained = local(2, 1) * spatial(8, 4) * local(1, 2);
  const Layout nested = compose(compose(local({2, 1}), spatial({8, 4})), local({1, 2}));
  EXPECT_EQ(chained, nested);
  EXPECT_EQ(chained, parse_layout("local(2, 1).spatial(8, 4).local(1, 2)"));
  EXPECT_EQ(print_layout(chained), print_layout(nested));
  EXPECT_EQ(compose(local(2, 1), spatial(8, 4), local(1, 2)), nested);
  // Not some other chain: the order matters.
  EXPECT_FALSE(chained == local(1, 2) * spatial(8, 4) * local(2, 1));
}

TEST(LayoutChain, LongChainsWithEveryPrimitive) {
  const Layout chained =
      column_local(2, 2) * spatial(8, 4) * local(1, 2) * replicate(2) * column_spatial(1, 2);
  const Layout nested =
      compose(compose(compose(compose(column_local({2, 2}), spatial({8, 4})), local({1, 2})), replicate(2)),
              column_spatial({1, 2}));
  EXPECT_EQ(chained, nested);
  EXPECT_EQ(compose(column_local(2, 2), spatial(8, 4), local(1, 2), replicate(2), column_spatial(1, 2)),
            nested);
  EXPECT_EQ(chained,
            parse_layout("column_local(2, 2).spatial(8, 4).local(1, 2).replicate(2).column_spatial(1, 2)"));
  // The mma.m16n8k16 B fragment, as target/atoms.h writes it in the text.
  EXPECT_EQ(local(2, 1) * column_spatial(4, 8) * local(2, 1),
            parse_layout("local(2, 1).column_spatial(4, 8).local(2, 1)"));
}

TEST(LayoutChain, SwizzlesAndRankBroadcastChainAsComposeDoes) {
  const Layout rows = make_swizzle(local(16, 8), 1);
  EXPECT_EQ(local(3, 1, 1) * rows * local(1, 8), compose(compose(local({3, 1, 1}), rows), local({1, 8})));
  // Ranks broadcast by prepending 1s, as in compose.
  EXPECT_EQ(spatial(4) * local(2, 2), compose(spatial({4}), local({2, 2})));
}

}  // namespace
}  // namespace tilevm::layout
