// The text form of superoptimizer graphs: the golden printed form, parse(print(g)) round trips, and the
// parser's messages (line:column and the concrete values).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "expect_error.h"
#include "superopt_test_util.h"
#include "tilevm/superopt/text.h"

namespace tilevm::superopt {
namespace {

using testing::read_test_file;

TEST(SuperoptText, PrintsTheGoldenForm) {
  Graph g = parse_graph(read_test_file("rmsnorm_linear_fused.graph"));
  EXPECT_EQ(print_graph(g), read_test_file("rmsnorm_linear_fused.expected"));
}

TEST(SuperoptText, PrintedTextParsesBackToTheSameGraph) {
  for (const char* name : {"rmsnorm_linear.graph", "rmsnorm_linear_fused.graph", "attention.graph",
                           "attention_fused.graph", "gated_mlp.graph"}) {
    SCOPED_TRACE(name);
    std::string printed = print_graph(parse_graph(read_test_file(name)));
    Graph again = parse_graph(printed);
    EXPECT_EQ(print_graph(again), printed);
    EXPECT_EQ(again.tensors().size(), parse_graph(printed).tensors().size());
  }
}

TEST(SuperoptText, BuilderGraphsRoundTrip) {
  Graph g = Graph::kernel("built");
  int x = g.input("X", {4, 8});
  int c = g.constant(parse_constant("-2.5e-1"), {1, 1});
  int y = g.binary(OpKind::Mul, x, c);
  int z = g.concat(y, x, 1, "Z");
  g.add_output(z);
  std::string printed = print_graph(g);
  EXPECT_EQ(printed,
            "kernel built {\n"
            "  input X [4, 8]\n"
            "  t1 = const(-2.5e-1) shape=[1, 1]\n"
            "  t2 = mul(X, t1)\n"
            "  Z = concat(t2, X) dim=1\n"
            "  output Z\n"
            "}\n");
  EXPECT_EQ(print_graph(parse_graph(printed)), printed);
}

TEST(SuperoptText, ConstantsAreExactRationals) {
  EXPECT_EQ(parse_constant("1e-6").den, 1000000);
  EXPECT_EQ(parse_constant("0.125").num, 1);
  EXPECT_EQ(parse_constant("0.125").den, 8);
  EXPECT_EQ(parse_constant("-3/12").num, -1);
  EXPECT_EQ(parse_constant("-3/12").den, 4);
  EXPECT_EQ(parse_constant("2.5E3").num, 2500);
  expect_error([] { parse_constant("1e-30"); }, "constant 1e-30 is not representable");
  expect_error([] { parse_constant("1/0"); }, "divides by zero");
  expect_error([] { parse_constant("abc"); }, "'abc' is not a number");
}

std::string parse_error(const std::string& text) {
  try {
    parse_graph(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SuperoptText, ErrorsNameTheLineAndTheValues) {
  EXPECT_EQ(parse_error("kernel k {\n  input X [4, 8]\n  Y = matmul(X, X)\n  output Y\n}\n"),
            "3:3: matmul: inner extents differ: [4, 8] x [4, 8]");
  EXPECT_EQ(parse_error("kernel k {\n  input X [4, 8]\n  Y = softmax(X)\n}\n"),
            "3:7: unknown operator 'softmax'");
  EXPECT_EQ(parse_error("kernel k {\n  input X [4, 8]\n  Y = exp(Z)\n}\n"),
            "3:11: 'Z' is not defined in this kernel graph");
  EXPECT_EQ(parse_error("kernel k {\n  input X [4, 8]\n  Y = iter(X) imap=[0] fmap=-\n}\n"),
            "3:7: iter is not an operator of a kernel graph");
  EXPECT_EQ(parse_error("kernel k {\n  input X [4, 8]\n  Y = sum(X) dim=2\n}\n"),
            "3:3: sum: dimension 2 is out of range for a tensor of shape [4, 8]");
  EXPECT_EQ(parse_error("kernel k {\n  input X [4, 8]\n  Y = exp(X) dim=1\n"),
            "3:14: exp takes no attribute 'dim'");
  EXPECT_EQ(parse_error("kernel k {\n  input X [4, 8]\n  Y = sum(X)\n"), "3:7: sum needs the attribute dim=");
  EXPECT_EQ(parse_error("kernel k {\n  input X [6, 8]\n"
                        "  (Y) = block(X) grid=[4] loop=1 {\n"
                        "    x = iter(X) imap=[0] fmap=-\n"
                        "    a = accum(x) fmap=-\n"
                        "    s = save(a) omap=[0]\n"
                        "  }\n}\n"),
            "4:5: iter of operand 0 [6, 8] imap=[0, -, -]: extent 6 of dimension 0 is not divisible by grid "
            "extent 4");
  EXPECT_EQ(parse_error("kernel k {\n  input X [8, 8]\n"
                        "  (Y) = block(X) grid=[4] loop=2 {\n"
                        "    x = iter(X) imap=[0] fmap=1\n"
                        "    s = save(x) omap=[0]\n"
                        "  }\n}\n"),
            "5:5: save: 'x' is computed in every loop iteration; accumulate it first (accum)");
  EXPECT_EQ(
      parse_error("kernel k {\n  input X [8, 8]\n"
                  "  (Y) = block(X) grid=[4, 2] loop=1 {\n"
                  "    x = iter(X) imap=[0] fmap=-\n"
                  "    a = accum(x) fmap=-\n"
                  "    s = save(a) omap=[0]\n"
                  "  }\n}\n"),
      "6:5: save of 'a' [2, 8] omap=[0, -, -]: grid dimension y has 2 blocks, which would write the same "
      "elements; map it to a dimension");
  EXPECT_EQ(parse_error("kernel k {\n  input X [4, 8] extra\n}\n"),
            "2:18: expected the end of the line, found 'extra'");
  EXPECT_EQ(parse_error("kernel k {\n  input X 4\n}\n"), "2:11: expected '[', found '4'");
  EXPECT_EQ(parse_error("kernel k {\n  input X [4, 8]\n"), "3:1: expected '}' to close the kernel graph");
}

// Damaged text (cut short, a character replaced or dropped) parses or throws tilevm::Error, nothing else.
RC_GTEST_PROP(SuperoptText, DamagedTextThrowsOnlyErrors, ()) {
  static const std::vector<std::string> texts = {read_test_file("rmsnorm_linear_fused.graph"),
                                                 read_test_file("attention_fused.graph")};
  std::string text = texts[*rc::gen::inRange<size_t>(0, texts.size())];
  size_t at = *rc::gen::inRange<size_t>(0, text.size());
  switch (*rc::gen::inRange(0, 3)) {
    case 0:
      text.resize(at);
      break;
    case 1:
      text[at] =
          *rc::gen::element('(', ')', '[', ']', '{', '}', ',', '=', '-', '0', '9', 'x', ' ', '\n', '/');
      break;
    default:
      text.erase(at, 1);
      break;
  }
  try {
    Graph g = parse_graph(text);
    RC_ASSERT(print_graph(parse_graph(print_graph(g))) == print_graph(g));
  } catch (const Error&) {
  }
}

}  // namespace
}  // namespace tilevm::superopt
