// Splitting a program into a head and a tail searched apart (superopt/split.h): which splits exist, what
// each part holds, and that joining the parts' answers computes the program (verified, lowered, checked).
#include <gtest/gtest.h>

#include "expect_error.h"
#include "superopt_test_util.h"
#include "tilevm/superopt/fuse.h"
#include "tilevm/superopt/lower_tile.h"
#include "tilevm/superopt/run_tile.h"
#include "tilevm/superopt/split.h"
#include "tilevm/superopt/verify.h"

namespace tilevm::superopt {
namespace {

std::vector<std::string> split_points(const Graph& program) {
  std::vector<std::string> at;
  for (const ProgramSplit& s : program_splits(program)) at.push_back(s.at);
  return at;
}

TEST(SuperoptSplit, SplitsWhereTheTailReadsOnlyTheSplitTensor) {
  const Graph attention = testing::test_graph("attention_32.graph");
  // Not at Z: the division reads E, which is the head's too. At P the tail is the last matmul alone.
  EXPECT_EQ(split_points(attention), (std::vector<std::string>{"S", "T", "E", "P"}));
  const std::vector<ProgramSplit> splits = program_splits(attention);
  const ProgramSplit& at_e = splits[2];
  EXPECT_EQ(print_graph(at_e.head),
            "kernel attention_head {\n"
            "  input Q [32, 32]\n"
            "  input K [32, 64]\n"
            "  S = matmul(Q, K)\n"
            "  c = const(1/8) shape=[1, 1]\n"
            "  T = mul(S, c)\n"
            "  E = exp(T)\n"
            "  output E\n"
            "}\n");
  EXPECT_EQ(print_graph(at_e.tail),
            "kernel attention_tail {\n"
            "  input V [64, 32]\n"
            "  input E [32, 64]\n"
            "  Z = sum(E) dim=1\n"
            "  P = div(E, Z)\n"
            "  O = matmul(P, V)\n"
            "  output O\n"
            "}\n");
  // A constant the head made and the tail reads is copied into the tail: at S, the tail scales by c.
  EXPECT_NE(print_graph(splits[0].tail).find("c = const(1/8)"), std::string::npos)
      << print_graph(splits[0].tail);
  // A tail that reads an intermediate of the head is no split: Y = E + S reads S beside E.
  const Graph reuse = parse_graph(
      "kernel f {\n  input A [8, 8]\n  input B [8, 8]\n  S = matmul(A, B)\n  E = exp(S)\n  Y = add(E, S)\n"
      "  output Y\n}\n");
  EXPECT_EQ(split_points(reuse), (std::vector<std::string>{"S"}));
  expect_error([] { program_splits(parse_graph(testing::read_test_file("rmsnorm_linear_fused.graph"))); },
               "graph-defined kernel");
}

// The head and the tail of attention split at E, each searched on its own, joined: the joined graph has
// two graph-defined kernels, verifies against the program, and lowers to kernels that compute it.
TEST(SuperoptSplit, TheJoinedAnswersComputeTheProgram) {
  const Graph attention = testing::test_graph("attention_32.graph");
  const ProgramSplit split = program_splits(attention)[2];
  // Two blocks of 16 rows (the lowering's Gemm needs 16 rows a warp); each part with its own ops and add.
  const ScheduleSpace space{.grid_extents = {2}, .loop_extents = {1}};
  const SearchResult head = search_schedules(
      split.head, space, {.max_ops = 4, .ops = {OpKind::Matmul, OpKind::Mul, OpKind::Exp, OpKind::Add}}, 1);
  const SearchResult tail = search_schedules(
      split.tail, space, {.max_ops = 4, .ops = {OpKind::Sum, OpKind::Div, OpKind::Matmul, OpKind::Add}}, 1);
  ASSERT_FALSE(head.found.empty());
  ASSERT_FALSE(tail.found.empty());
  const Graph joined =
      join_split(attention, split, fuse_elementwise(head.found[0]), fuse_elementwise(tail.found[0]));
  int blocks = 0;
  for (const Op& op : joined.ops()) blocks += op.kind == OpKind::Block;
  EXPECT_EQ(blocks, 2) << print_graph(joined);
  EXPECT_EQ(verify_equivalent(attention, joined).verdict, Verdict::Equivalent) << print_graph(joined);
  const NumericCheck c = check_numerically(attention, lower_to_tile(joined), {.seed = 3});
  EXPECT_TRUE(c.passed) << c.detail << "\n" << print_graph(joined);
  // Answers that do not fit their parts are refused: the tail's answer in the head's place.
  expect_error([&] { join_split(attention, split, tail.found[0], tail.found[0]); },
               "answer's output is not 'E'");
}

// Parts kept as their ops that both read a constant of the program (each has its copy) join into a graph
// that makes it once, and still computes the program.
TEST(SuperoptSplit, AConstantBothPartsKeepIsMadeOnce) {
  const Graph program = parse_graph(
      "kernel f {\n  input A [16, 16]\n  input B [16, 16]\n  S = matmul(A, B)\n  c = const(1/4) shape=[1, "
      "1]\n"
      "  T = mul(S, c)\n  U = mul(T, c)\n  output U\n}\n");
  const std::vector<ProgramSplit> splits = program_splits(program);
  ASSERT_EQ(splits.size(), 2u);
  const ProgramSplit& at_t = splits[1];
  ASSERT_EQ(at_t.at, "T");
  const Graph joined = join_split(program, at_t, at_t.head, at_t.tail);
  const std::string text = print_graph(joined);
  EXPECT_EQ(text.find("c = const"), text.rfind("c = const")) << text;
  EXPECT_EQ(verify_equivalent(program, joined).verdict, Verdict::Equivalent) << text;
}

// A part that gives no graph stays as its ops (kernel ops, one lowered kernel each) while the other part is
// fused: with ops that cannot make attention's row sums and division, the splits' tails give nothing (and at
// P the head), and each joined graph is one fused part beside the other part's tensor ops, verified and
// checked.
TEST(SuperoptSplit, APartThatGivesNothingRunsAsItsOps) {
  const Graph attention = testing::test_graph("attention_32.graph");
  const ScheduleSpace space{.grid_extents = {2}, .loop_extents = {1}};
  const auto head_ops = [](const Graph&) {
    return std::vector<OpKind>{OpKind::Matmul, OpKind::Mul, OpKind::Exp, OpKind::Add};
  };
  const SplitSearch r = search_split(attention, space, {.max_ops = 4}, head_ops, 1, 0, 600);
  EXPECT_EQ(r.lines, (std::vector<std::string>{
                         "split at S: the head a graph, the tail none (the tail runs as its ops)",
                         "split at T: the head a graph, the tail none (the tail runs as its ops)",
                         "split at E: the head a graph, the tail none (the tail runs as its ops)",
                         "split at P: the head none, the tail a graph (the head runs as its ops)",
                     }));
  ASSERT_EQ(r.joined.size(), 4u);
  for (const Graph& joined : r.joined) {
    int blocks = 0, kernel_ops = 0;
    for (const Op& op : joined.ops()) {
      blocks += op.kind == OpKind::Block;
      kernel_ops += op.kind != OpKind::Block && op.kind != OpKind::Input && op.kind != OpKind::Const;
    }
    EXPECT_EQ(blocks, 1) << print_graph(joined);
    EXPECT_GE(kernel_ops, 1) << print_graph(joined);
    EXPECT_EQ(verify_equivalent(attention, joined).verdict, Verdict::Equivalent) << print_graph(joined);
  }
  // The split at E (the head fused, then the tail's sum, division and product as three kernels) and the
  // one at P (the head's five ops as kernels, then the last product fused) lower and compute the program.
  for (size_t i : {size_t{2}, size_t{3}}) {
    const NumericCheck c = check_numerically(attention, lower_to_tile(r.joined[i]), {.seed = 5});
    EXPECT_TRUE(c.passed) << c.detail << "\n" << print_graph(r.joined[i]);
  }
  // Every top-level part is searched whole before any part is split again: split once more (depth 1), the
  // tails that gave nothing are searched as inner splits only after the last top-level part.
  const SplitSearch deeper = search_split(attention, space, {.max_ops = 4}, head_ops, 1, 1, 600);
  size_t top = 0;
  while (top < deeper.searched.size() && deeper.searched[top][0] != ' ') ++top;
  EXPECT_EQ(top, 8u) << "the four splits' heads and tails first";
  ASSERT_GT(deeper.searched.size(), top) << "the tails are split again";
  for (size_t i = top; i < deeper.searched.size(); ++i)
    EXPECT_EQ(deeper.searched[i][0], ' ') << deeper.searched[i];
  // Where no part gives a graph, a split is no answer: nothing is joined of the program's ops alone.
  const auto add_only = [](const Graph&) { return std::vector<OpKind>{OpKind::Add}; };
  EXPECT_TRUE(search_split(attention, space, {.max_ops = 2}, add_only, 1, 1, 600).joined.empty());
}

}  // namespace
}  // namespace tilevm::superopt
