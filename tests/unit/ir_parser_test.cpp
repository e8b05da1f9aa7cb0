// The .tile parser: the IR it builds (definitions, types, locations, folded constants, named layouts, -D),
// its diagnostics (message and location of every kind of error, several per file), and a fuzz test: random
// bytes and mutated programs give diagnostics, never an exception or a crash.
#include <random>

#include <gtest/gtest.h>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/printer.h"
#include "tilevm/layout/layout_text.h"

namespace tilevm::ir {
namespace {

Program parse_ok(const std::string& text, const ParseOptions& options = {}) {
  Diagnostics diags;
  auto p = parse_program(text, diags, options);
  EXPECT_TRUE(p.has_value()) << diags.render("input", text);
  return p ? std::move(*p) : Program{};
}

// The sorted diagnostics as `LINE:COL: message` lines.
std::string errors_of(const std::string& text, const ParseOptions& options = {}) {
  Diagnostics diags;
  auto p = parse_program(text, diags, options);
  EXPECT_FALSE(p.has_value());
  std::string out;
  for (const Diagnostic& d : diags.sorted())
    out += fmt::format("{}:{}: {}\n", d.loc.line, d.loc.col, d.message);
  return out;
}

const char* kSmall = R"(M, N = 64, 32
BM = M / 4
lc = local(2, 1).spatial(8, 4).local(1, 2)

def small<M / BM, 2>(f16* a_ptr, i32 n):
    bi, bj = BlockIndices()
    g = ViewGlobal(a_ptr, dtype=f16, shape=[M, N])
    acc = AllocateRegister(f32, layout=lc, init=0.0)
    x = bi * BM
    x = x + 1.5
    y: i64 = n
    for k in range(n):
        t = LoadGlobal(g[k:, :], layout=lc, offset=[x, 0])
        Add(acc, t, out=acc)
    acc = Cast(acc, dtype=f16)
)";

TEST(IrParser, BuildsTheProgram) {
  Program p = parse_ok(kSmall);
  EXPECT_EQ(p.name, "small");
  ASSERT_EQ(p.grid.size(), 2u);
  EXPECT_EQ(as_const_int(p.grid[0]), 4);  // M / BM folded
  EXPECT_EQ(p.loc, (SourceLoc{5, 1}));
  ASSERT_EQ(p.params.size(), 2u);
  EXPECT_TRUE(p.params[0]->type.is_pointer());
  EXPECT_EQ(p.params[0]->type.dtype, DataType::f16());
  EXPECT_EQ(p.params[1]->loc, (SourceLoc{5, 38}));
  ASSERT_EQ(p.layouts.size(), 1u);
  EXPECT_EQ(p.layouts[0].first, "lc");
  EXPECT_EQ(layout::print_layout(p.layouts[0].second), "local(2, 1).spatial(8, 4).local(1, 2)");
  ASSERT_EQ(p.constants.size(), 3u);
  EXPECT_EQ(p.constants[2].first, "BM");
  EXPECT_EQ(as_const_int(p.constants[2].second), 16);

  ASSERT_EQ(p.body.size(), 8u);
  const auto* bidx = p.body[0]->as<InstStmt>();
  ASSERT_TRUE(bidx);
  ASSERT_EQ(bidx->results.size(), 2u);
  EXPECT_TRUE(bidx->results[1]->type.is_scalar());
  EXPECT_EQ(bidx->loc, (SourceLoc{6, 5}));
  EXPECT_EQ(bidx->inst->loc, (SourceLoc{6, 14}));

  const auto* x_def = p.body[3]->as<AssignStmt>();
  const auto* x_upd = p.body[4]->as<AssignStmt>();
  ASSERT_TRUE(x_def && x_upd);
  EXPECT_TRUE(x_def->defines);
  EXPECT_FALSE(x_upd->defines);
  EXPECT_EQ(x_def->var, x_upd->var);
  EXPECT_EQ(x_def->var->type.dtype, DataType::i32());
  EXPECT_EQ(print_expr(x_def->value), "bi * 16");  // the constant is substituted as a literal
  EXPECT_EQ(x_def->value->as<BinaryExpr>()->b->loc, (SourceLoc{9, 14}));

  const auto* y = p.body[5]->as<AssignStmt>();
  EXPECT_EQ(y->var->type.dtype, DataType::i64());
  EXPECT_EQ(y->value->type, DataType::i32());

  const auto* loop = p.body[6]->as<ForStmt>();
  ASSERT_TRUE(loop);
  EXPECT_EQ(as_const_int(loop->start), 0);
  EXPECT_EQ(as_const_int(loop->step), 1);
  ASSERT_EQ(loop->body.size(), 2u);
  const auto* load = loop->body[0]->as<InstStmt>()->inst->as<LoadGlobalInst>();
  ASSERT_TRUE(load);
  EXPECT_EQ(load->src.loc, (SourceLoc{13, 24}));
  ASSERT_EQ(load->src.slices.size(), 2u);
  EXPECT_EQ(load->src.slices[0].kind, Slice::Kind::Offset);
  EXPECT_EQ(load->src.slices[1].kind, Slice::Kind::Full);
  EXPECT_EQ(load->offset.size(), 2u);
  const auto* add = loop->body[1]->as<InstStmt>();
  EXPECT_TRUE(add->results.empty());
  EXPECT_TRUE(add->inst->as<ElementwiseInst>()->out);

  // acc = Cast(acc, ...) defines a new tensor variable named acc, reading the old one.
  const auto* cast = p.body[7]->as<InstStmt>();
  ASSERT_EQ(cast->results.size(), 1u);
  EXPECT_EQ(cast->results[0]->type.dtype, DataType::f16());
  EXPECT_EQ(cast->inst->as<CastInst>()->src.tensor, p.body[2]->as<InstStmt>()->results[0]);
}

TEST(IrParser, ScalarOperandsAreExpressions) {
  Program p = parse_ok(R"(def f<1>(i32 n):
    r = AllocateRegister(f32, layout=local(4))
    s = Mul(r, n * 2)
    Print(n)
    Print(s)
)");
  const auto* mul = p.body[1]->as<InstStmt>()->inst->as<ElementwiseInst>();
  ASSERT_TRUE(mul);
  EXPECT_TRUE(mul->args[0].is_tensor());
  EXPECT_FALSE(mul->args[1].is_tensor());
  EXPECT_EQ(print_expr(mul->args[1].scalar), "n * 2");
  EXPECT_FALSE(p.body[2]->as<InstStmt>()->inst->as<PrintInst>()->value.is_tensor());
  EXPECT_TRUE(p.body[3]->as<InstStmt>()->inst->as<PrintInst>()->value.is_tensor());
}

TEST(IrParser, DefinesOverrideConstants) {
  ParseOptions options;
  options.defines = {{"M", "128"}, {"S", "2.5"}};
  Program p = parse_ok("M = 64\nS = 1.0\nT = M * 2\ndef f<T>():\n    x = S\n", options);
  EXPECT_EQ(as_const_int(p.grid[0]), 256);
  EXPECT_EQ(print_expr(p.body[0]->as<AssignStmt>()->value), "2.5");

  options.defines = {{"Q", "1"}};
  EXPECT_EQ(errors_of("M = 64\ndef f<M>():\n    pass\n", options),
            "0:0: -D Q=1: the program has no top-level constant 'Q'\n");
  options.defines = {{"M", "abc"}};
  EXPECT_EQ(errors_of("M = 64\ndef f<M>():\n    pass\n", options), "1:1: -D M=abc: unknown name 'abc'\n");
}

TEST(IrParser, ConstantExpressionsFold) {
  Program p = parse_ok("A = 3\nB = A * 0.5 + 1\nL = local(A + 1, 16 / A)\ndef f<1>():\n    x = B\n");
  EXPECT_EQ(print_expr(p.body[0]->as<AssignStmt>()->value), "2.5");
  EXPECT_EQ(layout::print_layout(p.layouts[0].second), "local(4, 5)");
}

struct ErrorCase {
  const char* name;
  const char* source;
  const char* expected;  // `LINE:COL: message` lines
};

class IrParserErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(IrParserErrors, ReportsWithLocation) {
  EXPECT_EQ(errors_of(GetParam().source), GetParam().expected);
}

const ErrorCase kErrorCases[] = {
    {"unknown_name", "def f<1>():\n    x = y + 1\n", "2:9: unknown name 'y'\n"},
    {"unknown_instruction", "def f<1>():\n    Foo(1)\n", "2:5: unknown instruction 'Foo'\n"},
    {"too_many_positional", "def f<1>():\n    Exit(1)\n",
     "2:10: Exit takes 0 positional arguments (), got 1\n"},
    {"unknown_keyword", "def f<1>():\n    CopyAsyncWaitGroup(m=1)\n",
     "2:24: CopyAsyncWaitGroup has no argument 'm'; its arguments are n\n"},
    {"missing_argument", "def f<1>():\n    CopyAsyncWaitGroup()\n",
     "2:5: CopyAsyncWaitGroup needs argument 'n'\n"},
    {"bad_dtype", "def f<1>():\n    r = AllocateRegister(f9e4m3, layout=local(2))\n",
     "2:26: invalid data type 'f9e4m3': at position 1: a low-bit float has 3 to 8 bits, got 9\n"},
    {"bad_layout", "def f<1>():\n    r = AllocateRegister(f32, layout=local(2, 3) / local(1, 2))\n",
     "2:52: cannot divide a layout of shape [2, 3] (T=1, m=6) by one of shape [1, 2] (T=1, m=2): extent 3 of "
     "dimension 1 is not a multiple of 2\n"},
    {"bad_indent", "def f<1>():\n    x = 1\n  y = 2\n",
     "3:3: unindent does not match any outer indentation level\n"},
    {"unexpected_indent", "def f<1>():\n    x = 1\n        y = 2\n", "3:9: unexpected indent\n"},
    {"unterminated", "def f<1>():\n    x = min(1, 2\n    y = 2\n", "2:12: '(' was never closed\n"},
    {"count_mismatch", "def f<1>():\n    a, b = Exit()\n",
     "2:5: Exit defines 0 values, but 2 names are assigned\n"},
    {"assign_out", "def f<1>():\n    r = AllocateRegister(f32, layout=local(2))\n    s = Neg(r, out=r)\n",
     "3:5: Neg with out= writes into 'r' and defines nothing; write it as a bare statement\n"},
    {"tensor_as_scalar", "def f<1>():\n    r = AllocateRegister(f32, layout=local(2))\n    x = r * 2\n",
     "3:9: a scalar is needed here, but 'r' is register f32[2]\n"},
    {"scalar_as_tensor", "def f<1>(i32 n):\n    c = Cast(n, dtype=f16)\n",
     "2:14: a tensor is needed here, but 'n' is i32\n"},
    {"break_outside_loop", "def f<1>():\n    break\n", "2:5: 'break' outside a loop\n"},
    {"no_def", "X = 1\n", "2:1: expected a program: 'def NAME<grid>(params):'\n"},
    {"missing_block", "def f<1>():\n    if True:\n    x = 1\n",
     "3:5: expected an indented block, found 'x'\n"},
    {"bad_character", "def f<1>():\n    x = 1 $ 2\n", "2:11: unexpected character '$'\n"},
    {"grid_rank", "def f<1, 1, 1, 1>():\n    pass\n", "1:6: a grid has 1 to 3 dimensions, got 4\n"},
    {"several", "def f<1>(i32 n):\n    x = y\n    z = n +\n    continue\n    n = q\n",
     "2:9: unknown name 'y'\n3:12: expected an expression, found end of line\n4:5: 'continue' outside a "
     "loop\n5:9: unknown name 'q'\n"},
    {"poisoned_names_stay_silent",
     "def f<1>():\n    r = AllocateRegister(f99, layout=local(2))\n    s = Neg(r)\n",
     "2:26: invalid data type 'f99': at position 1: a float has 3 to 8 bits (f<b>e<E>m<M>) or is f16, f32 or "
     "f64, got 99\n"},
};

INSTANTIATE_TEST_SUITE_P(All, IrParserErrors, ::testing::ValuesIn(kErrorCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(IrParser, DeepNestingIsAnErrorNotACrash) {
  std::string deep = "def f<1>():\n    x = " + std::string(5000, '(') + "1" + std::string(5000, ')') + "\n";
  EXPECT_NE(errors_of(deep).find("nested deeper than"), std::string::npos);
  std::string chain = "def f<1>():\n    x = 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  EXPECT_NE(errors_of(chain + "\n").find("nested deeper than"), std::string::npos);
  std::string blocks = "def f<1>():\n";
  for (int i = 0; i < 300; ++i) blocks += std::string(4 * (i + 1), ' ') + "while True:\n";
  blocks += std::string(4 * 301, ' ') + "pass\n";
  EXPECT_NE(errors_of(blocks).find("nested deeper than"), std::string::npos);
}

// Random bytes, and random mutations and truncations of valid programs: the parser reports diagnostics (or
// parses), never throws and never crashes; whatever it parses prints and reparses.
TEST(IrParser, Fuzz) {
  std::mt19937 rng(20261121);
  const std::string alphabet = "abcdefxyz_0123456789 \n\n    ()[]:,.=+-*/%<>&|^#\t!\"$LoadGlobal(f16f32local";
  std::vector<std::string> seeds = {kSmall};
  std::string tokens[] = {"(",    ")",    "[",      "]", ":", ",",   "=", "\n", "    ", "def", "if", "for",
                          "Add(", "out=", "local(", "1", "x", "acc", "-", "/",  "not ", ".",   "<",  ">"};
  int parsed = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::string text;
    if (iteration % 3 == 0) {
      int n = static_cast<int>(rng() % 200);
      for (int i = 0; i < n; ++i) {
        text += iteration % 2 ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
      }
    } else {
      text = seeds[rng() % seeds.size()];
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        size_t at = rng() % text.size();
        switch (rng() % 4) {
          case 0:
            text.erase(at, 1 + rng() % 8);
            break;
          case 1:
            text.insert(at, tokens[rng() % std::size(tokens)]);
            break;
          case 2:
            text[at] = alphabet[rng() % alphabet.size()];
            break;
          case 3:
            text.resize(at);
            break;
        }
      }
    }
    Diagnostics diags;
    std::optional<Program> p;
    ASSERT_NO_THROW(p = parse_program(text, diags)) << text;
    if (p) {
      ++parsed;
      EXPECT_FALSE(diags.has_errors());
      std::string once = print_program(*p);
      Diagnostics again;
      auto q = parse_program(once, again);
      ASSERT_TRUE(q.has_value()) << once << again.render("printed", once);
      EXPECT_EQ(print_program(*q), once);
    } else {
      EXPECT_TRUE(diags.has_errors()) << text;
      for (const Diagnostic& d : diags.all()) EXPECT_FALSE(d.message.empty());
      ASSERT_NO_THROW((void)diags.render("fuzz.tile", text));
    }
  }
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace tilevm::ir
