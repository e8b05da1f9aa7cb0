// Fusing element-wise chains into thread graphs: the fused graph prints as expected and verifies
// equivalent to the original, for the test workloads and for the graphs the search finds.
#include <gtest/gtest.h>

#include "superopt_test_util.h"
#include "tilevm/superopt/fuse.h"
#include "tilevm/superopt/search.h"
#include "tilevm/superopt/verify.h"

namespace tilevm::superopt {
namespace {

using testing::test_graph;

TEST(SuperoptFuse, ChainsBecomeThreadOps) {
  Graph g = parse_graph(
      "kernel k {\n  input A [4, 4]\n  input B [4, 4]\n"
      "  (Y) = block(A, B) grid=[2] loop=2 {\n    a = iter(A) imap=[0] fmap=1\n    b = iter(B) imap=[0] "
      "fmap=1\n"
      "    m = mul(a, b)\n    e = exp(m)\n    s = silu(e)\n    q = square(a)\n    t = add(s, q)\n"
      "    acc = accum(t) fmap=1\n    y = save(acc) omap=[0]\n  }\n  output Y\n}\n");
  Graph fused = fuse_elementwise(g);
  EXPECT_EQ(print_graph(fused),
            "kernel k {\n"
            "  input A [4, 4]\n"
            "  input B [4, 4]\n"
            "  (Y) = block(A, B) grid=[2, 1, 1] loop=2 {\n"
            "    a = iter(A) imap=[0, -, -] fmap=1\n"
            "    b = iter(B) imap=[0, -, -] fmap=1\n"
            "    q = square(a)\n"
            "    (t) = thread(a, b, q) {\n"
            "      input a [2, 2]\n"
            "      input b [2, 2]\n"
            "      input q [2, 2]\n"
            "      m = mul(a, b)\n"
            "      e = exp(m)\n"
            "      s = silu(e)\n"
            "      t = add(s, q)\n"
            "      output t\n"
            "    }\n"
            "    acc = accum(t) fmap=1\n"
            "    y = save(acc) omap=[0, -, -]\n"
            "  }\n"
            "  output Y\n"
            "}\n");
  EXPECT_EQ(verify_equivalent(g, fused).verdict, Verdict::Equivalent);
}

TEST(SuperoptFuse, FusedWorkloadsStayEquivalent) {
  for (const char* name : {"rmsnorm_linear_fused.graph", "attention_fused.graph"}) {
    Graph g = test_graph(name);
    Graph fused = fuse_elementwise(g);
    EXPECT_EQ(verify_equivalent(g, fused).verdict, Verdict::Equivalent) << name;
    EXPECT_EQ(print_graph(parse_graph(print_graph(fused))), print_graph(fused)) << name;
  }
  // rmsnorm_linear_fused: mul, add, sqrt and div after the loop become one thread op.
  std::string printed = print_graph(fuse_elementwise(test_graph("rmsnorm_linear_fused.graph")));
  EXPECT_NE(printed.find("(y) = thread(acc_ss, inv_n, eps, acc_xw) {"), std::string::npos) << printed;
}

TEST(SuperoptFuse, SearchResultsFuse) {
  Graph program = testing::softmax_program();
  SearchResult r = search_block_graphs(program, testing::softmax_schedule(),
                                       {.max_ops = 5, .ops = {OpKind::Exp, OpKind::Sum, OpKind::Div}});
  ASSERT_FALSE(r.found.empty());
  for (const Graph& g : r.found)
    EXPECT_EQ(verify_equivalent(program, fuse_elementwise(g)).verdict, Verdict::Equivalent);
}

}  // namespace
}  // namespace tilevm::superopt
