// Superoptimizer graphs: shapes of every operator, the diagnostics of bad graphs, and the semantics of block
// and thread graphs checked on real numbers against the plain kernel ops they stand for.
#include <cmath>

#include <gtest/gtest.h>

#include "expect_error.h"
#include "superopt_test_util.h"
#include "tilevm/superopt/evaluate.h"
#include "tilevm/superopt/verify.h"

namespace tilevm::superopt {
namespace {

using testing::random_inputs;
using testing::test_graph;

void expect_close(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t o = 0; o < a.size(); ++o) {
    ASSERT_EQ(a[o].size(), b[o].size());
    for (size_t i = 0; i < a[o].size(); ++i)
      ASSERT_NEAR(a[o][i], b[o][i], 1e-9 * (1 + std::abs(a[o][i]))) << "output " << o << " element " << i;
  }
}

// The two graphs, given as text, compute the same on random real inputs.
void expect_same_on_reals(const std::string& a, const std::string& b, uint64_t seed) {
  Graph ga = parse_graph(a), gb = parse_graph(b);
  auto inputs = random_inputs(ga, seed);
  expect_close(evaluate_real(ga, inputs), evaluate_real(gb, inputs));
}

TEST(SuperoptGraph, ShapesOfTheKernelOperators) {
  Graph g = Graph::kernel("k");
  int a = g.input("A", {2, 4, 8});
  int b = g.input("B", {2, 8, 3});
  int r = g.input("R", {2, 4, 1});
  EXPECT_EQ(g.tensor(g.binary(OpKind::Matmul, a, b)).shape, (Shape{2, 4, 3}));
  EXPECT_EQ(g.tensor(g.binary(OpKind::Div, a, r)).shape, (Shape{2, 4, 8}));
  EXPECT_EQ(g.tensor(g.sum(a, 1)).shape, (Shape{2, 1, 8}));
  EXPECT_EQ(g.tensor(g.concat(a, a, 2)).shape, (Shape{2, 4, 16}));
  EXPECT_EQ(g.tensor(g.rms_norm(a, parse_constant("1e-6"))).shape, (Shape{2, 4, 8}));
  EXPECT_EQ(g.tensor(g.unary(OpKind::Gelu, a)).shape, (Shape{2, 4, 8}));
}

TEST(SuperoptGraph, BadGraphsSayWhatIsWrong) {
  Graph g = Graph::kernel("k");
  int a = g.input("A", {4, 8});
  int b = g.input("B", {3, 8});
  expect_error([&] { g.binary(OpKind::Add, a, b); },
               "add: extents of dimension 0 differ and neither is 1: [4, 8] and [3, 8]");
  expect_error([&] { g.binary(OpKind::Matmul, a, b); }, "matmul: inner extents differ: [4, 8] x [3, 8]");
  expect_error([&] { g.binary(OpKind::Exp, a, b); }, "exp is not a binary operator");
  expect_error([&] { g.concat(a, b, 1); },
               "concat: along dimension 1 the other extents must agree: [4, 8] and [3, 8]");
  expect_error([&] { g.input("A", {2}); }, "'A' is defined twice in a kernel graph");
  expect_error([&] { g.input("C", {0, 2}); }, "input 'C': extents must be >= 1, got [0, 2]");
  expect_error([&] { g.iter(0, kAllReplica, kReplica); }, "iter is not an operator of a kernel graph");
  expect_error(
      [&] {
        g.input("Huge", {1 << 30, 1 << 30, 1 << 30});
      },
      "input: 'Huge' of shape [1073741824, 1073741824, 1073741824] has more than 2^63 elements");
  expect_error([&] { Graph::block({2, 0, 1}, 1, {}); }, "grid extents must be >= 1, got [2, 0, 1]");

  Graph block = Graph::block({2, 1, 1}, 2, {{6, 8}});
  int x = block.iter(0, {0, kReplica, kReplica}, 1);
  EXPECT_EQ(block.tensor(x).shape, (Shape{3, 4}));
  expect_error([&] { block.iter(1, kAllReplica, kReplica); },
               "iter: operand 1 does not exist; the block op has 1");
  expect_error(
      [&] {
        block.iter(0, {0, kReplica, kReplica}, 0);
      },
      "extent 3 of dimension 0 (per block) is not divisible by loop extent 2");
  int acc = block.accum(x, kReplica);
  expect_error(
      [&] { block.binary(OpKind::Add, x, acc); },
      "add: 't0' is computed in every loop iteration but 't1' after the loop; accumulate the first (accum)");
  block.save(acc, {0, kReplica, kReplica});
  Graph other = Graph::block({2, 1, 1}, 2, {{4, 8}});
  expect_error([&] { g.block_op({a}, block); },
               "block: operand 0 'A' has shape [4, 8] but the block graph expects [6, 8]");
  expect_error([&] { g.block_op({a}, std::move(other)); }, "block: its block graph saves nothing");
}

TEST(SuperoptGraph, ExpOfExpIsOutsideTheLaxFragment) {
  Graph g = parse_graph(
      "kernel k {\n  input X [2, 2]\n  E = exp(X)\n  S = sum(E) dim=1\n  F = exp(S)\n  output F\n}\n");
  expect_error([&] { check_lax(g); },
               "outside the Lax fragment: 'F = exp(S)' applies exp to a value that already went through exp");
  // A non-Lax function in between makes a fresh value: exp(sqrt(exp(x))) is checked up to sqrt.
  check_lax(parse_graph(
      "kernel k {\n  input X [2, 2]\n  E = exp(X)\n  R = sqrt(E)\n  F = exp(R)\n  output F\n}\n"));
  check_lax(test_graph("attention_fused.graph"));
  // Through a block graph: the operand went through exp already.
  Graph block = parse_graph(
      "kernel k {\n  input X [2, 2]\n  E = exp(X)\n"
      "  (Y) = block(E) grid=[1] loop=1 {\n    e = iter(E) imap=[-] fmap=-\n    f = exp(e)\n"
      "    a = accum(f) fmap=-\n    y = save(a) omap=[-]\n  }\n  output Y\n}\n");
  expect_error([&] { check_lax(block); }, "'f = exp(e)' applies exp");
  // Per output of a block op: exp after the one output that went through exp is refused, after the other
  // it is not.
  std::string two_outputs =
      "kernel k {{\n  input X [2, 2]\n"
      "  (A, B) = block(X) grid=[1] loop=1 {{\n    x = iter(X) imap=[-] fmap=-\n    e = exp(x)\n"
      "    a = accum(e) fmap=-\n    b = accum(x) fmap=-\n    sa = save(a) omap=[-]\n    sb = save(b) "
      "omap=[-]\n"
      "  }}\n  F = exp({})\n  output F\n}}\n";
  check_lax(parse_graph(fmt::format(fmt::runtime(two_outputs), "B")));
  expect_error([&] { check_lax(parse_graph(fmt::format(fmt::runtime(two_outputs), "A"))); },
               "'F = exp(A)' applies exp");
}

TEST(SuperoptGraph, BlockMatmulComputesTheMatmul) {
  // 4 x 2 blocks over the rows of A and the columns of B, 4 iterations over k: every part of imap, fmap,
  // accumulation and omap is used.
  expect_same_on_reals(
      "kernel k {\n  input A [8, 16]\n  input B [16, 6]\n  C = matmul(A, B)\n  output C\n}\n",
      "kernel k {\n  input A [8, 16]\n  input B [16, 6]\n"
      "  (C) = block(A, B) grid=[4, 2] loop=4 {\n"
      "    a = iter(A) imap=[0, -] fmap=1\n    b = iter(B) imap=[-, 1] fmap=0\n"
      "    m = matmul(a, b)\n    acc = accum(m) fmap=-\n    c = save(acc) omap=[0, 1]\n  }\n  output C\n}\n",
      7);
}

TEST(SuperoptGraph, AccumulatorConcatenatesAlongItsDimension) {
  // exp over a [4, 8] tensor in 2 blocks of rows and 4 iterations of columns, concatenated back.
  expect_same_on_reals("kernel k {\n  input X [4, 8]\n  E = exp(X)\n  output E\n}\n",
                       "kernel k {\n  input X [4, 8]\n"
                       "  (E) = block(X) grid=[2] loop=4 {\n    x = iter(X) imap=[0] fmap=1\n    e = exp(x)\n"
                       "    acc = accum(e) fmap=1\n    s = save(acc) omap=[0]\n  }\n  output E\n}\n",
                       3);
}

TEST(SuperoptGraph, ImapAndFmapOnOneDimensionSplitBlockMajor) {
  // Grid and loop both split dimension 1: block b, iteration i reads columns [b * 4 + i * 2, +2), and the
  // accumulator and the save put them back in place.
  expect_same_on_reals("kernel k {\n  input X [2, 8]\n  E = exp(X)\n  output E\n}\n",
                       "kernel k {\n  input X [2, 8]\n"
                       "  (E) = block(X) grid=[2] loop=2 {\n    x = iter(X) imap=[1] fmap=1\n    e = exp(x)\n"
                       "    acc = accum(e) fmap=1\n    s = save(acc) omap=[1]\n  }\n  output E\n}\n",
                       5);
}

TEST(SuperoptGraph, FusedGraphsComputeTheirPrograms) {
  for (auto [program, fused] : {std::pair{"rmsnorm_linear.graph", "rmsnorm_linear_fused.graph"},
                                std::pair{"attention.graph", "attention_fused.graph"}}) {
    SCOPED_TRACE(fused);
    Graph a = test_graph(program), b = test_graph(fused);
    auto inputs = random_inputs(a, 11);
    expect_close(evaluate_real(a, inputs), evaluate_real(b, inputs));
  }
}

TEST(SuperoptGraph, RealFunctionsAreTheUsualOnes) {
  Graph g = parse_graph(
      "kernel k {\n  input X [1, 3]\n  A = silu(X)\n  B = gelu(X)\n  C = relu(X)\n  D = rms_norm(X) eps=0\n"
      "  output A, B, C, D\n}\n");
  auto out = evaluate_real(g, {{-1.0, 0.5, 2.0}});
  EXPECT_NEAR(out[0][2], 2.0 / (1.0 + std::exp(-2.0)), 1e-12);
  EXPECT_NEAR(out[1][0], -0.15865525393145705, 1e-12);
  EXPECT_EQ(out[2], (std::vector<double>{0.0, 0.5, 2.0}));
  EXPECT_NEAR(out[3][1], 0.5 / std::sqrt((1.0 + 0.25 + 4.0) / 3), 1e-12);
}

}  // namespace
}  // namespace tilevm::superopt
