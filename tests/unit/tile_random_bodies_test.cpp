// Random Parallel bodies (issue 15's random generator, its element-wise half): expression trees over a
// fragment, global reads (a tile and a broadcast row), index values (the loop variables and a kernel argument
// plus one), float and integer literals, with + - * / % min max, unary -, abs, exp, where and comparisons.
// Each program is lowered (verified after every pass) and run on the interpreter, and every output element is
// compared bit for bit with a reference that evaluates the same tree by the language's rules: the dtype of
// each operation the tile layer's (ints compute in i32, a float operand or a float function makes it f32),
// each result exact in double and rounded once to it, integer / and % truncating. A program the tile layer
// cannot lay out must be refused with a located diagnostic.
//
// TILEVM_BODY_CASES overrides the number of programs (default 1000, about a second).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "interp_test_util.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/parser.h"
#include "tilevm/transform/lower.h"
#include "tilevm/type/convert.h"

namespace tilevm::tile {
namespace {

enum class Ty { I32, F16, F32, Bool };

// A value of the reference: whether it varies with the element (a tile; else a loop-invariant scalar), its
// dtype, and the number (ints exact in the double).
struct Value {
  bool tile = false;
  Ty ty = Ty::F32;
  double v = 0;
};

struct Node;
using NodePtr = std::shared_ptr<const Node>;

struct Node {
  enum Kind { S, X, Bias, I, J, QJ, LitF, LitI, Q, Bin, Cmp, Neg, Abs, Exp, Where } kind = LitF;
  std::string op;  // Bin: + - * / % min max; Cmp: < <= > >= == !=
  double lit = 0;
  std::vector<NodePtr> args;
};

// Whether the node's value varies with the element (reads or a loop variable below it).
bool varies(const Node& n) {
  switch (n.kind) {
    case Node::LitF:
    case Node::LitI:
    case Node::Q:
      return false;
    case Node::S:
    case Node::X:
    case Node::Bias:
    case Node::I:
    case Node::J:
    case Node::QJ:
      return true;
    default:
      for (const NodePtr& a : n.args)
        if (varies(*a)) return true;
      return false;
  }
}

class Generator {
 public:
  explicit Generator(std::mt19937& rng) : rng_(rng) {}

  // A tree that varies with the element (every operator has such an operand, so that no subtree is a
  // scalar expression the IR would compute by its own rules).
  NodePtr tree(int depth) {
    if (depth == 0 || rng_() % 4 == 0) return leaf(true);
    const int pick = static_cast<int>(rng_() % 10);
    auto n = std::make_shared<Node>();
    if (pick < 5) {
      static const char* kOps[] = {"+", "-", "*", "/", "%", "min", "max"};
      n->kind = Node::Bin;
      n->op = kOps[rng_() % 7];
      NodePtr a = tree(depth - 1);
      NodePtr b = rng_() % 2 ? tree(depth - 1) : leaf(false);
      // Integer division and remainder only of the varying operand by a positive literal (a zero divisor
      // is an error on the interpreter); float ones take anything, either way round.
      if ((n->op == "/" || n->op == "%") && integral(*a) && integral(*b))
        b = int_literal(1 + rng_() % 5);
      else if (rng_() % 2)
        std::swap(a, b);
      n->args = {a, b};
    } else if (pick < 6) {
      n->kind = rng_() % 2 ? Node::Neg : Node::Abs;
      n->args = {tree(depth - 1)};
    } else if (pick < 7) {
      n->kind = Node::Exp;
      n->args = {tree(depth - 1)};
    } else {
      n->kind = Node::Where;
      static const char* kCmps[] = {"<", "<=", ">", ">=", "==", "!="};
      auto c = std::make_shared<Node>();
      c->kind = Node::Cmp;
      c->op = kCmps[rng_() % 6];
      c->args = {tree(depth - 1), rng_() % 2 ? tree(depth - 1) : leaf(false)};
      // Sometimes both values are scalars (the result is then f32, whatever their types).
      n->args = {c, rng_() % 5 ? tree(depth - 1) : leaf(false), rng_() % 2 ? tree(depth - 1) : leaf(false)};
      if (rng_() % 2) std::swap(n->args[1], n->args[2]);
    }
    return n;
  }

  NodePtr comparison(int depth) {
    static const char* kCmps[] = {"<", "<=", ">", ">=", "==", "!="};
    auto c = std::make_shared<Node>();
    c->kind = Node::Cmp;
    c->op = kCmps[rng_() % 6];
    c->args = {tree(depth), rng_() % 2 ? tree(depth) : leaf(false)};
    return c;
  }

 private:
  // Whether the node computes in i32 (then / and % are integer ones).
  static bool integral(const Node& n) {
    switch (n.kind) {
      case Node::I:
      case Node::J:
      case Node::QJ:
      case Node::LitI:
      case Node::Q:
        return true;
      case Node::Bin:
        return integral(*n.args[0]) && integral(*n.args[1]);
      case Node::Neg:
      case Node::Abs:
        return integral(*n.args[0]);
      case Node::Where:  // (two scalar branches compute in f32)
        return integral(*n.args[1]) && integral(*n.args[2]) && (varies(*n.args[1]) || varies(*n.args[2]));
      default:
        return false;
    }
  }
  NodePtr int_literal(int64_t v) {
    auto n = std::make_shared<Node>();
    n->kind = Node::LitI;
    n->lit = static_cast<double>(v);
    return n;
  }
  NodePtr leaf(bool varying) {
    auto n = std::make_shared<Node>();
    if (varying) {
      static const Node::Kind kTiles[] = {Node::S, Node::S, Node::X, Node::Bias, Node::I, Node::J, Node::QJ};
      n->kind = kTiles[rng_() % 7];
      return n;
    }
    switch (rng_() % 3) {
      case 0: {
        static const double kFloats[] = {0.5, 1.5, -2.0, 3.0, 0.25, -0.75, INFINITY};
        n->kind = Node::LitF;
        n->lit = kFloats[rng_() % 7];
        break;
      }
      case 1:
        n->kind = Node::LitI;
        n->lit = static_cast<double>(static_cast<int>(rng_() % 7) - 3);
        if (n->lit == 0) n->lit = 2;
        break;
      default:
        n->kind = Node::Q;
    }
    return n;
  }

  std::mt19937& rng_;
};

std::string text(const Node& n) {
  switch (n.kind) {
    case Node::S:
      return "s[i, j]";
    case Node::X:
      return "x[i, j]";
    case Node::Bias:
      return "b[j]";
    case Node::I:
      return "i";
    case Node::J:
      return "j";
    case Node::QJ:
      return "(q + 1 + j)";
    case Node::LitF:
      if (std::isinf(n.lit)) return n.lit > 0 ? "inf" : "(-inf)";
      return fmt::format("{}", n.lit) + (n.lit == std::floor(n.lit) ? ".0" : "");
    case Node::LitI:
      return fmt::format("{}", static_cast<int64_t>(n.lit));
    case Node::Q:
      return "q";
    case Node::Bin:
      if (n.op == "min" || n.op == "max")
        return fmt::format("{}({}, {})", n.op, text(*n.args[0]), text(*n.args[1]));
      return fmt::format("({} {} {})", text(*n.args[0]), n.op, text(*n.args[1]));
    case Node::Cmp:
      return fmt::format("({} {} {})", text(*n.args[0]), n.op, text(*n.args[1]));
    case Node::Neg:
      return fmt::format("(-{})", text(*n.args[0]));
    case Node::Abs:
      return fmt::format("abs({})", text(*n.args[0]));
    case Node::Exp:
      return fmt::format("exp({})", text(*n.args[0]));
    case Node::Where:
      return fmt::format("where({}, {}, {})", text(*n.args[0]), text(*n.args[1]), text(*n.args[2]));
  }
  return "";
}

// An arithmetic result rounded to `ty`: to nearest even, past the largest finite value to inf (IEEE).
double round_to(Ty ty, double v) {
  if (ty == Ty::F32) return static_cast<double>(static_cast<float>(v));
  if (ty == Ty::F16) {
    if (std::isfinite(v) && std::fabs(v) >= 65520.0) return std::copysign(INFINITY, v);
    return decode(DataType::f16(), encode(DataType::f16(), v));
  }
  if (ty == Ty::I32)
    return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(v))));
  return v;
}

// The value stored into an element of `ty` (a bool is 1 or 0): a Cast where the dtypes differ, which
// saturates a finite value past the type's range to its largest (docs/language.md, conversions).
double stored(Ty ty, const Value& v) {
  if (v.ty == ty) return v.v;
  if (ty == Ty::F16) return decode(DataType::f16(), encode(DataType::f16(), v.v));
  return round_to(ty, v.v);
}

// The element [i, j] of the tree's value, by the tile layer's rules (lower_parallel.cpp, `op`).
struct Element {
  int64_t i = 0, j = 0, q = 0;
  double s = 0, x = 0, b = 0;
  Ty s_ty = Ty::F32;  // the fragment's dtype
};

Value eval(const Node& n, const Element& e) {
  switch (n.kind) {
    case Node::S:
      return {true, e.s_ty, e.s};
    case Node::X:
      return {true, Ty::F32, e.x};
    case Node::Bias:
      return {true, Ty::F32, e.b};
    case Node::I:
      return {true, Ty::I32, static_cast<double>(e.i)};
    case Node::J:
      return {true, Ty::I32, static_cast<double>(e.j)};
    case Node::QJ:
      return {true, Ty::I32, static_cast<double>(e.q + 1 + e.j)};
    case Node::LitF:
      return {false, Ty::F32, n.lit};
    case Node::LitI:
      return {false, Ty::I32, n.lit};
    case Node::Q:
      return {false, Ty::I32, static_cast<double>(e.q)};
    default:
      break;
  }
  std::vector<Value> args;
  for (const NodePtr& a : n.args) args.push_back(eval(*a, e));
  // The dtype: the wider of the element operands' (a Where's condition aside; f32 over i32), f32 when a
  // scalar operand is a float or the function is one (exp), f32 for a Where of two scalars.
  const size_t first = n.kind == Node::Where ? 1 : 0;
  std::optional<Ty> ty;
  bool float_scalar = false;
  for (size_t k = first; k < args.size(); ++k) {
    if (args[k].tile)
      ty = ty ? std::max(*ty, args[k].ty) : args[k].ty;  // f32 over f16 over i32
    else
      float_scalar |= args[k].ty == Ty::F32;
  }
  if (!ty) ty = Ty::F32;
  if ((float_scalar || n.kind == Node::Exp) && *ty == Ty::I32) ty = Ty::F32;
  // Each operand converted to that dtype first (a Cast of a tile; the instruction converts a scalar): an i32
  // of 3025 is 3024 in f16.
  for (size_t k = first; k < args.size(); ++k) args[k] = {args[k].tile, *ty, stored(*ty, args[k])};
  const double a = args[first].v;
  const double b = args.size() > first + 1 ? args[first + 1].v : 0;
  switch (n.kind) {
    case Node::Neg:
      return {true, *ty, round_to(*ty, -a)};
    case Node::Abs:
      return {true, *ty, round_to(*ty, std::fabs(a))};
    case Node::Exp:
      return {true, *ty, round_to(*ty, std::exp(a))};
    case Node::Where:
      return {true, *ty, args[0].v != 0 ? a : b};
    case Node::Cmp: {
      bool r = false;
      if (n.op == "<") r = a < b;
      if (n.op == "<=") r = a <= b;
      if (n.op == ">") r = a > b;
      if (n.op == ">=") r = a >= b;
      if (n.op == "==") r = a == b;
      if (n.op == "!=") r = a != b;
      return {true, Ty::Bool, r ? 1.0 : 0.0};
    }
    default:
      break;
  }
  double r = 0;
  if (*ty == Ty::I32) {
    const auto x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
    if (n.op == "+") r = static_cast<double>(x + y);
    if (n.op == "-") r = static_cast<double>(x - y);
    if (n.op == "*") r = static_cast<double>(x * y);
    if (n.op == "/") r = static_cast<double>(x / y);
    if (n.op == "%") r = static_cast<double>(x % y);
    if (n.op == "min") r = static_cast<double>(std::min(x, y));
    if (n.op == "max") r = static_cast<double>(std::max(x, y));
  } else {
    if (n.op == "+") r = a + b;
    if (n.op == "-") r = a - b;
    if (n.op == "*") r = a * b;
    if (n.op == "/") r = a / b;
    if (n.op == "%") r = std::fmod(a, b);
    // -0 orders below +0 (docs/language.md: min(-0, +0) is -0 whichever comes first).
    if (n.op == "min") r = a == b ? (std::signbit(a) ? a : b) : std::fmin(a, b);
    if (n.op == "max") r = a == b ? (std::signbit(a) ? b : a) : std::fmax(a, b);
  }
  return {true, *ty, round_to(*ty, r)};
}

bool same_value(double got, double want) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  return got == want && std::signbit(got) == std::signbit(want);
}

// One random program: its text, the trees of its two statements and its inputs.
struct BodyCase {
  int64_t rows = 1, cols = 8, threads = 32, q = 0;
  NodePtr first, second;
  Ty s_ty = Ty::F32, y_ty = Ty::F32;
  std::string source;
  std::vector<double> x, b;
  DataType y_dtype() const { return y_ty == Ty::F16 ? DataType::f16() : DataType::f32(); }
};

BodyCase random_body(std::mt19937& rng) {
  BodyCase c;
  c.rows = int64_t{1} << (rng() % 5);
  c.cols = int64_t{8} << (rng() % 5);
  c.threads = int64_t{32} << (rng() % 3);
  c.q = static_cast<int64_t>(rng() % 9) - 4;
  Generator gen(rng);
  c.first = gen.tree(3);
  c.second = gen.tree(3);
  if (rng() % 8 == 0) c.second = gen.comparison(2);  // a bool stored (1 or 0), broadcast where it must be
  c.s_ty = rng() % 3 == 0 ? Ty::F16 : Ty::F32;
  c.y_ty = rng() % 3 == 0 ? Ty::F16 : Ty::F32;
  c.source = fmt::format(
      "def body<1>[threads={}](f32* x_ptr, f32* b_ptr, {}* y_ptr, i32 q):\n"
      "    x = ViewGlobal(x_ptr, dtype=f32, shape=[{}, {}])\n"
      "    b = ViewGlobal(b_ptr, dtype=f32, shape=[{}])\n"
      "    y = ViewGlobal(y_ptr, dtype={}, shape=[{}, {}])\n"
      "    s = AllocateFragment({}, shape=[{}, {}])\n"
      "    Copy(x, s)\n"
      "    for i, j in Parallel({}, {}):\n"
      "        s[i, j] = {}\n"
      "        y[i, j] = {}\n",
      c.threads, c.y_dtype().name(), c.rows, c.cols, c.cols, c.y_dtype().name(), c.rows, c.cols,
      c.s_ty == Ty::F16 ? "f16" : "f32", c.rows, c.cols, c.rows, c.cols, text(*c.first), text(*c.second));
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  c.x.resize(static_cast<size_t>(c.rows * c.cols));
  c.b.resize(static_cast<size_t>(c.cols));
  for (double& v : c.x) v = round_to(Ty::F32, dist(rng));
  for (double& v : c.b) v = round_to(Ty::F32, dist(rng));
  return c;
}

// y after a run of the case (on the GPU or the interpreter).
std::optional<std::vector<double>> run_body(const BodyCase& c, const ir::Program& p, bool gpu,
                                            Diagnostics& diags) {
  std::vector<uint8_t> xb = interp::testing::pack_values(DataType::f32(), c.x);
  std::vector<uint8_t> bb = interp::testing::pack_values(DataType::f32(), c.b);
  // Poisoned with a finite value no tree computes by chance (f32 1.3e36, f16 61280), not NaN: a NaN would
  // pass for an element left unwritten wherever the rules give NaN.
  std::vector<uint8_t> yb(static_cast<size_t>(c.rows * c.cols * c.y_dtype().bits() / 8), 0x7b);
  interp::Arguments args;
  args.buffers = {{"x_ptr", &xb}, {"b_ptr", &bb}, {"y_ptr", &yb}};
  args.scalars["q"] = interp::testing::int_arg(c.q);
  const bool ok = gpu ? exec::run_on_gpu(p, args, diags) : interp::run_program(p, args, diags);
  if (!ok) return std::nullopt;
  return interp::testing::unpack_values(c.y_dtype(), yb, c.rows * c.cols);
}

std::optional<ir::Program> lower_body(const BodyCase& c, Diagnostics& diags) {
  std::optional<ir::Program> p = ir::parse_program(c.source, diags);
  if (!p || diags.has_errors()) return std::nullopt;
  return transform::lower(*std::move(p), diags, {.verify_each_pass = true});
}

TEST(TileRandomBodies, InterpreterEqualsTheLanguagesRules) {
  const char* env = std::getenv("TILEVM_BODY_CASES");
  const int cases = env ? std::atoi(env) : 1000;
  std::mt19937 rng(20261127);
  int ran = 0, refused = 0;
  for (int k = 0; k < cases; ++k) {
    const BodyCase c = random_body(rng);
    SCOPED_TRACE(c.source);
    Diagnostics diags;
    std::optional<ir::Program> p = lower_body(c, diags);
    if (!p) {
      // Refused (threads that do not spread over the tile): located, like every diagnostic.
      ASSERT_TRUE(diags.has_errors());
      for (const Diagnostic& d : diags.all()) EXPECT_TRUE(d.loc.known()) << d.message;
      ++refused;
      continue;
    }
    const std::optional<std::vector<double>> got = run_body(c, *p, false, diags);
    ASSERT_TRUE(got) << diags.render("body.tile", c.source);
    for (int64_t i = 0; i < c.rows; ++i)
      for (int64_t j = 0; j < c.cols; ++j) {
        Element e{i,     j, c.q, 0, c.x[static_cast<size_t>(i * c.cols + j)], c.b[static_cast<size_t>(j)],
                  c.s_ty};
        e.s = stored(c.s_ty, {true, Ty::F32, e.x});  // the Copy converts x into the fragment
        e.s = stored(c.s_ty, eval(*c.first, e));     // the first statement updates s for the whole tile first
        const double want = stored(c.y_ty, eval(*c.second, e));
        const double g = (*got)[static_cast<size_t>(i * c.cols + j)];
        ASSERT_TRUE(same_value(g, want))
            << "y[" << i << ", " << j << "] = " << g << ", the rules give " << want;
      }
    ++ran;
  }
  std::cout << cases << " bodies: " << ran << " ran, " << refused << " refused\n";
  EXPECT_GT(ran, cases / 2);
}

// The same programs on the GPU against the interpreter: equal, but for the last bits of what the GPU
// computes with its own exp (in double, then rounded like the interpreter's).
TEST(TileRandomBodiesGpu, GpuEqualsTheInterpreter) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(20261127);
  int ran = 0;
  for (int k = 0; k < 200; ++k) {
    const BodyCase c = random_body(rng);
    SCOPED_TRACE(c.source);
    Diagnostics diags;
    std::optional<ir::Program> p = lower_body(c, diags);
    if (!p) continue;
    const std::optional<std::vector<double>> cpu = run_body(c, *p, false, diags);
    const std::optional<std::vector<double>> gpu = run_body(c, *p, true, diags);
    ASSERT_TRUE(cpu && gpu) << diags.render("body.tile", c.source);
    const double rel = c.y_ty == Ty::F16 ? 1e-3 : 1e-6;
    for (size_t e = 0; e < cpu->size(); ++e) {
      const double a = (*cpu)[e], g = (*gpu)[e];
      if (same_value(g, a)) continue;
      ASSERT_TRUE(std::isfinite(a) && std::isfinite(g) && std::fabs(g - a) <= rel * std::fabs(a))
          << "element " << e << ": the GPU gives " << g << ", the interpreter " << a;
    }
    ++ran;
  }
  EXPECT_GT(ran, 100);
}

}  // namespace
}  // namespace tilevm::tile
