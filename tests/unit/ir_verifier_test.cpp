// The verifier (include/tilevm/ir/verifier.h) on programs built directly with the IR node constructors:
// one valid program per feature, and for each family of errors a program with several errors, all of which
// must be reported at the offending node with the concrete values in the message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/verifier.h"
#include "tilevm/target/atoms.h"
#include "tilevm/transform/infer_threads.h"

namespace tilevm::ir {
namespace {

using layout::Layout;

SourceLoc L(int line, int col = 1) {
  return SourceLoc{line, col};
}

Var scalar_var(const std::string& name, DataType t = DataType::i32()) {
  return make_var(name, ValueType::scalar(t));
}
Var pointer_var(const std::string& name, DataType t) {
  return make_var(name, ValueType::pointer(t));
}

Var reg(const std::string& name, DataType dtype, const Layout& lay) {
  TensorType t;
  t.dtype = dtype;
  t.scope = Scope::Register;
  for (int64_t e : lay.shape()) t.shape.push_back(make_int(e));
  t.layout = lay;
  return make_var(name, ValueType::tensor_of(std::move(t)));
}

Var shared(const std::string& name, DataType dtype, const layout::Index& shape) {
  TensorType t;
  t.dtype = dtype;
  t.scope = Scope::Shared;
  for (int64_t e : shape) t.shape.push_back(make_int(e));
  t.layout = layout::local(shape);
  return make_var(name, ValueType::tensor_of(std::move(t)));
}

Var global(const std::string& name, DataType dtype, std::vector<Expr> shape) {
  TensorType t;
  t.dtype = dtype;
  t.scope = Scope::Global;
  t.shape = std::move(shape);
  return make_var(name, ValueType::tensor_of(std::move(t)));
}

TensorArg arg(const Var& v, std::vector<Slice> slices = {}) {
  return TensorArg{v, std::move(slices), {}};
}
Operand top(const Var& v) {
  return Operand{arg(v), nullptr};
}
Operand sop(Expr e) {
  return Operand{std::nullopt, std::move(e)};
}
Slice index(int64_t v) {
  return Slice{Slice::Kind::Index, make_int(v)};
}
Slice from(int64_t v) {
  return Slice{Slice::Kind::Offset, make_int(v)};
}

Stmt st(std::vector<Var> results, Inst inst, SourceLoc loc = {}) {
  return std::make_shared<InstStmt>(std::move(results), std::move(inst), loc);
}
Stmt st(Inst inst, SourceLoc loc = {}) {
  return st({}, std::move(inst), loc);
}
template <typename T, typename... Args>
Inst mk(Args&&... args) {
  return std::make_shared<T>(std::forward<Args>(args)...);
}

// A register definition statement `name = AllocateRegister(dtype, layout)`.
Stmt alloc(const Var& v, SourceLoc loc = {}) {
  const TensorType& t = *v->type.tensor;
  return st({v}, mk<AllocateRegisterInst>(t.dtype, *t.layout, nullptr, loc), loc);
}
Stmt alloc_shared(const Var& v, SourceLoc loc = {}) {
  const TensorType& t = *v->type.tensor;
  return st({v}, mk<AllocateSharedInst>(t.dtype, t.shape, std::nullopt, loc), loc);
}

Program program(Block body, std::vector<Var> params = {}, int threads = 0,
                std::vector<Expr> grid = {make_int(1)}) {
  Program p;
  p.name = "k";
  p.grid = std::move(grid);
  p.threads = threads;
  p.params = std::move(params);
  p.body = std::move(body);
  p.loc = L(1);
  return p;
}

// "LINE:COL: message" for every diagnostic, in order of location.
std::vector<std::string> check(Program& p) {
  Diagnostics d;
  bool ok = verify_program(p, d);
  std::vector<std::string> out;
  for (const Diagnostic& x : d.sorted())
    out.push_back(fmt::format("{}:{}: {}", x.loc.line, x.loc.col, x.message));
  EXPECT_EQ(ok, out.empty());
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

#define EXPECT_ERRORS(p, ...)                           \
  do {                                                  \
    std::vector<std::string> expected_ = {__VA_ARGS__}; \
    std::vector<std::string> actual_ = check(p);        \
    EXPECT_EQ(joined(actual_), joined(expected_));      \
  } while (0)

const target::MmaAtom& atom_f16_f32() {
  for (const auto& a : target::mma_atoms())
    if (a.a == DataType::f16() && a.c == DataType::f32()) return a;
  throw std::runtime_error("no f16 atom");
}

// ---- valid programs

TEST(IrVerifier, ValidMatmulChecksCleanAndInfersThreads) {
  const auto& atom = atom_f16_f32();
  Var a_ptr = pointer_var("a_ptr", DataType::f16()), b_ptr = pointer_var("b_ptr", DataType::f16()),
      c_ptr = pointer_var("c_ptr", DataType::f32()), n = scalar_var("n");
  Var ga = global("ga", DataType::f16(), {make_var_ref(n), make_int(16)});
  Var gb = global("gb", DataType::f16(), {make_int(16), make_int(8)});
  Var gc = global("gc", DataType::f32(), {make_var_ref(n), make_int(8)});
  Var bi = scalar_var("bi");
  Var acc = reg("acc", DataType::f32(), atom.layout_c);
  Var a = reg("a", DataType::f16(), atom.layout_a), b = reg("b", DataType::f16(), atom.layout_b);
  Var k = scalar_var("k");
  Expr row = make_binary(BinaryOp::Mul, make_var_ref(bi), make_int(16));
  Block loop = {
      st({a}, mk<LoadGlobalInst>(arg(ga), atom.layout_a, std::vector<Expr>{row, make_int(0)})),
      st({b}, mk<LoadGlobalInst>(arg(gb), atom.layout_b)),
      st(mk<DotInst>(arg(a), arg(b), arg(acc), acc)),
  };
  Program p = program(
      {
          st({ga}, mk<ViewGlobalInst>(make_var_ref(a_ptr), DataType::f16(), ga->type.tensor->shape,
                                      std::vector<Expr>{}, std::nullopt)),
          st({gb}, mk<ViewGlobalInst>(make_var_ref(b_ptr), DataType::f16(), gb->type.tensor->shape,
                                      std::vector<Expr>{}, std::nullopt)),
          st({gc}, mk<ViewGlobalInst>(make_var_ref(c_ptr), DataType::f32(), gc->type.tensor->shape,
                                      std::vector<Expr>{}, std::nullopt)),
          st({bi}, mk<BlockIndicesInst>()),
          st({acc}, mk<AllocateRegisterInst>(DataType::f32(), atom.layout_c, make_float(0.0))),
          std::make_shared<ForStmt>(k, make_int(0), make_int(4), make_int(1), loop),
          st(mk<StoreGlobalInst>(arg(acc), arg(gc), std::vector<Expr>{row, make_int(0)})),
      },
      {a_ptr, b_ptr, c_ptr, n}, 0, {make_binary(BinaryOp::CeilDiv, make_var_ref(n), make_int(16))});
  EXPECT_ERRORS(p);
  EXPECT_EQ(p.threads, 0);  // the verifier only checks; transform::infer_threads writes the count
  EXPECT_EQ(transform::infer_threads(p).threads, 32);
}

TEST(IrVerifier, SharedPipelineChecksClean) {
  Var g_ptr = pointer_var("g_ptr", DataType::f16());
  Var g = global("g", DataType::f16(), {make_int(64), make_int(64)});
  Var s = shared("s", DataType::f16(), {2, 16, 16});
  Layout rl = layout::compose(layout::spatial({16, 2}), layout::local({1, 8}));
  Var r = reg("r", DataType::f16(), rl), r2 = reg("r2", DataType::f16(), rl);
  Var i = scalar_var("i");
  Expr stage = make_binary(BinaryOp::Mod, make_var_ref(i), make_int(2));
  Block loop = {
      st(mk<CopyAsyncInst>(
          arg(s, {Slice{Slice::Kind::Index, stage}}),
          arg(g, {from(0),
                  Slice{Slice::Kind::Offset, make_binary(BinaryOp::Mul, make_var_ref(i), make_int(16))}}))),
      st(mk<CopyAsyncCommitGroupInst>()),
      st(mk<CopyAsyncWaitGroupInst>(make_int(0))),
      st(mk<SynchronizeInst>()),
      st({r}, mk<LoadSharedInst>(arg(s, {Slice{Slice::Kind::Index, stage}}), rl)),
      st(mk<StoreSharedInst>(arg(r), arg(s), std::vector<Expr>{make_int(1), make_int(0), make_int(0)})),
      std::make_shared<IfStmt>(std::vector<Expr>{make_binary(BinaryOp::Eq, make_var_ref(i), make_int(3))},
                               std::vector<Block>{{std::make_shared<BreakStmt>()}}, Block{}, false),
  };
  Program p = program(
      {
          st({g}, mk<ViewGlobalInst>(make_var_ref(g_ptr), DataType::f16(), g->type.tensor->shape,
                                     std::vector<Expr>{}, std::nullopt)),
          alloc_shared(s),
          std::make_shared<ForStmt>(i, make_int(0), make_int(4), make_int(1), loop),
          st({r2}, mk<LoadSharedInst>(arg(s, {index(1)}), rl)),
          st(mk<FreeSharedInst>(s)),
          st(mk<PrintInst>(top(r2))),
      },
      {g_ptr}, 32);
  EXPECT_ERRORS(p);
}

// ---- the thread count

TEST(IrVerifier, ThreadCountMustMatchTheHeader) {
  Var a = reg("a", DataType::f32(), layout::spatial({8, 8})),
      b = reg("b", DataType::f32(), layout::spatial({4, 8}));
  Program p = program({alloc(a, L(2, 5)), alloc(b, L(3, 5))}, {}, 32);
  EXPECT_ERRORS(p, "2:5: layout has 64 threads but the program has 32");
}

TEST(IrVerifier, ThreadCountInferredFromTheFirstLayout) {
  Var a = reg("a", DataType::f32(), layout::spatial({8, 8})),
      b = reg("b", DataType::f32(), layout::spatial({4, 8})),
      c = reg("c", DataType::f32(), layout::spatial({4, 4}));
  Program p = program({alloc(a, L(2, 5)), alloc(b, L(3, 5)), alloc(c, L(4, 5))});
  EXPECT_ERRORS(p, "3:5: layout has 32 threads but the program has 64 (from the layout at 2:5)",
                "4:5: layout has 16 threads but the program has 64 (from the layout at 2:5)");
  EXPECT_EQ(p.threads, 0);  // checked against the first layout's count, which is not written
}

TEST(IrVerifier, NoRegisterLayoutNeedsThreads) {
  Program p = program({std::make_shared<ReturnStmt>(L(2))});
  EXPECT_ERRORS(
      p, "1:1: 'k' has no register layout to take its thread count from; write [threads=T] in the header");
  Program q = program({std::make_shared<ReturnStmt>(L(2))}, {}, 64);
  EXPECT_ERRORS(q);
}

// ---- scalar expressions, grid, parameters

TEST(IrVerifier, ScalarExpressionTyping) {
  Var n = scalar_var("n"), x = scalar_var("x", DataType::f32()),
      flag = scalar_var("flag", DataType::boolean());
  Var y = scalar_var("y"), z = scalar_var("z"), w = scalar_var("w"), v = scalar_var("v");
  Program p = program(
      {
          std::make_shared<AssignStmt>(
              y, make_binary(BinaryOp::BitAnd, make_var_ref(x, L(2, 9)), make_var_ref(n), L(2, 11)), true,
              L(2, 5)),
          std::make_shared<AssignStmt>(z, make_binary(BinaryOp::Div, make_var_ref(n), make_int(0), L(3, 11)),
                                       true, L(3, 5)),
          std::make_shared<AssignStmt>(w, make_binary(BinaryOp::Shl, make_var_ref(n), make_int(40), L(4, 11)),
                                       true, L(4, 5)),
          std::make_shared<AssignStmt>(
              v, make_binary(BinaryOp::And, make_var_ref(n), make_var_ref(flag), L(5, 11)), true, L(5, 5)),
          std::make_shared<IfStmt>(std::vector<Expr>{make_var_ref(n, L(6, 8))}, std::vector<Block>{{}},
                                   Block{}, false, L(6, 5)),
          std::make_shared<WhileStmt>(make_unary(UnaryOp::Not, make_var_ref(x), L(7, 11)), Block{}, L(7, 5)),
          std::make_shared<AssignStmt>(flag, make_int(1, L(8, 12)), false, L(8, 5)),
      },
      {n, x, flag}, 1);
  EXPECT_ERRORS(p, "2:11: '&' needs integer operands, got f32 and i32", "3:11: division by zero in n / 0",
                "4:11: shift by 40 is out of range for i32 (0 to 31)",
                "5:11: 'and' needs bool operands, got i32 and bool",
                "6:8: the if condition must be a bool, got i32 (n); compare it, e.g. n != 0",
                "7:11: 'not' needs a bool operand, got f32", "8:12: 'flag' is bool but the value is i32");
}

TEST(IrVerifier, RangeBoundsAndStep) {
  Var x = scalar_var("x", DataType::f32()), i = scalar_var("i");
  Program p = program({std::make_shared<ForStmt>(i, make_int(0), make_var_ref(x, L(2, 20)),
                                                 make_int(0, L(2, 23)), Block{}, L(2, 5))},
                      {x}, 1);
  EXPECT_ERRORS(p, "2:20: the range stop must be an integer, got f32 (x)",
                "2:23: the range step must not be 0");
}

TEST(IrVerifier, GridAndParameters) {
  Var n = scalar_var("n"), x = scalar_var("x", DataType::f32());
  Var t = reg("t", DataType::f32(), layout::local({4}));
  Var bad = make_var("g", t->type, L(1, 30));
  Var dup = make_var("n", ValueType::scalar(DataType::i32()), L(1, 40));
  Program p = program({}, {n, x, bad, dup}, 1,
                      {make_var_ref(n), make_var_ref(x, L(1, 10)), make_int(0, L(1, 14)),
                       make_binary(BinaryOp::Add, make_var_ref(t), make_int(1), L(1, 17))});
  EXPECT_ERRORS(
      p, "1:1: the grid has 4 dimensions; it must have 1 to 3",
      "1:10: grid extent 1 must be an integer, got f32 (x)",
      "1:14: grid extent 2 is 0; it must be at least 1",
      "1:17: grid extent 3 uses 't'; the grid may use only constants and scalar parameters",
      "1:30: parameter 'g' is register f32[4]; a parameter is a pointer (f16* g) or a scalar (i32 g)",
      "1:40: parameter 'n' is declared twice");
}

// ---- scopes, offsets, slices

TEST(IrVerifier, OperandScopes) {
  Var g = global("g", DataType::f16(), {make_int(16), make_int(16)});
  Var s = shared("s", DataType::f16(), {16, 16});
  Var r = reg("r", DataType::f16(), layout::spatial({16, 16}));
  Var g_ptr = pointer_var("g_ptr", DataType::f16());
  Layout rl = layout::spatial({16, 16});
  Program p = program(
      {
          st({g}, mk<ViewGlobalInst>(make_var_ref(g_ptr), DataType::f16(), g->type.tensor->shape,
                                     std::vector<Expr>{}, std::nullopt)),
          alloc_shared(s),
          alloc(r),
          st(mk<LoadGlobalInst>(arg(s), rl, std::vector<Expr>{}, nullptr, L(3, 5))),
          st(mk<LoadSharedInst>(arg(g), rl, std::vector<Expr>{}, nullptr, L(4, 5))),
          st(mk<StoreSharedInst>(arg(r), arg(g), std::vector<Expr>{}, L(5, 5))),
          st(mk<CopyAsyncInst>(arg(g), arg(s), L(6, 5))),
          st(mk<FreeSharedInst>(r, L(7, 5))),
          st(mk<StoreGlobalInst>(arg(s), arg(g), std::vector<Expr>{}, L(8, 5))),
      },
      {g_ptr});
  EXPECT_ERRORS(p, "3:5: LoadGlobal: the source must be a global tensor, 's' is shared f16[16, 16]",
                "4:5: LoadShared: the source must be a shared tensor, 'g' is global f16[16, 16]",
                "5:5: StoreShared: the destination must be a shared tensor, 'g' is global f16[16, 16]",
                "6:5: CopyAsync: the destination must be a shared tensor, 'g' is global f16[16, 16]",
                "6:5: CopyAsync: the source must be a global tensor, 's' is shared f16[16, 16]",
                "7:5: FreeShared: 'r' is register f16[16, 16], not a shared tensor",
                "8:5: StoreGlobal: the source must be a register tensor, 's' is shared f16[16, 16]");
}

TEST(IrVerifier, OffsetRanksAndSlices) {
  Var g_ptr = pointer_var("g_ptr", DataType::f16());
  Var gmem_a = global("gmem_a", DataType::f16(), {make_int(64), make_int(64)});
  Var r = reg("r", DataType::f16(), layout::spatial({4, 8}));
  Layout l3 = layout::spatial({2, 2, 8});
  Program p = program(
      {
          st({gmem_a}, mk<ViewGlobalInst>(make_var_ref(g_ptr), DataType::f16(), gmem_a->type.tensor->shape,
                                          std::vector<Expr>{}, std::nullopt)),
          alloc(r),
          st(mk<LoadGlobalInst>(arg(gmem_a), layout::spatial({4, 8}),
                                std::vector<Expr>{make_int(0), make_int(0), make_int(0)}, nullptr, L(3, 5))),
          st(mk<StoreGlobalInst>(TensorArg{r, {index(0)}, L(4, 17)}, arg(gmem_a), std::vector<Expr>{},
                                 L(4, 5))),
          st(mk<LoadGlobalInst>(TensorArg{gmem_a, {index(0), from(0), from(1)}, L(5, 16)},
                                layout::spatial({4, 8}), std::vector<Expr>{}, nullptr, L(5, 5))),
          st(mk<LoadGlobalInst>(TensorArg{gmem_a, {index(1)}, L(6, 16)}, layout::spatial({4, 8}),
                                std::vector<Expr>{make_int(0), make_float(1.5, L(6, 40))}, nullptr, L(6, 5))),
          st(mk<LoadGlobalInst>(TensorArg{gmem_a, {}, L(7, 16)}, l3, std::vector<Expr>{}, nullptr, L(7, 5))),
      },
      {g_ptr});
  EXPECT_ERRORS(p, "3:5: LoadGlobal: offset has 3 entries but 'gmem_a' has rank 2",
                "4:17: StoreGlobal: register tensor 'r' cannot be sliced",
                "5:16: LoadGlobal: 'gmem_a' has rank 2 but 3 subscripts",
                "6:5: LoadGlobal: offset has 2 entries but the view of 'gmem_a' has rank 1",
                "6:16: LoadGlobal: the tile has rank 2 but the view of 'gmem_a' has rank 1",
                "6:40: LoadGlobal: offset entry 1 must be an integer, got f32 (1.5)",
                "7:16: LoadGlobal: the tile has rank 3 but 'gmem_a' has rank 2");
}

TEST(IrVerifier, SharedMemoryRules) {
  Var n = scalar_var("n");
  Var s = shared("s", DataType::f16(), {16, 16});
  Var t = shared("t", DataType::f32(), {16, 16});
  Var u = scalar_var("u");
  Layout rl = layout::spatial({16, 2});
  Layout lrep = layout::compose(layout::replicate(2), layout::local({4, 4}));
  Program p = program(
      {
          st(mk<AllocateSharedInst>(DataType::f16(), std::vector<Expr>{make_var_ref(n), make_int(8)},
                                    std::nullopt, L(2, 5))),
          st(mk<AllocateSharedInst>(DataType::f16(), std::vector<Expr>{}, layout::spatial({4, 4}), L(3, 5))),
          st(mk<AllocateSharedInst>(DataType::f16(), std::vector<Expr>{}, lrep, L(4, 5))),
          st(mk<AllocateSharedInst>(DataType::f16(), std::vector<Expr>{make_int(8), make_int(8)},
                                    layout::local({4, 4}), L(5, 5))),
          alloc_shared(s),
          alloc_shared(t),
          st(mk<LoadSharedInst>(arg(s), rl, std::vector<Expr>{make_int(0), make_int(15)}, nullptr, L(6, 5))),
          st(mk<CopyAsyncWaitGroupInst>(make_int(-1, L(7, 24)), L(7, 5))),
          st(mk<CopyAsyncWaitGroupInst>(make_var_ref(n, L(8, 24)), L(8, 5))),
          st(mk<CopyAsyncInst>(arg(s, {from(0), from(8)}), arg(t), L(9, 5))),
          std::make_shared<AssignStmt>(u, make_int(0), true),
      },
      {n}, 32);
  EXPECT_ERRORS(
      p, "2:5: AllocateShared: extent 0 is n; a shared tensor's shape must be constant",
      "3:5: AllocateShared: the layout has 16 threads; a memory layout has 1 (spatial(4, 4))",
      "4:5: AllocateShared: the layout has 2 threads; a memory layout has 1 (local(4, 4).replicate(2))",
      "5:5: AllocateShared: the shape [8, 8] differs from the layout's shape [4, 4]",
      "6:5: LoadShared: a tile of shape [16, 2] at [0, 15] exceeds 's' of shape [16, 16] (dimension 1)",
      "7:24: CopyAsyncWaitGroup: n is -1; it must not be negative",
      "8:24: CopyAsyncWaitGroup: n must be an integer constant, got n (i32)",
      "9:5: CopyAsync: the source must be a global tensor, 't' is shared f32[16, 16]");
}

TEST(IrVerifier, StoreAndCopyDtypes) {
  Var p1 = pointer_var("p1", DataType::f16()), p2 = pointer_var("p2", DataType::f32());
  Var g16 = global("g16", DataType::f16(), {make_int(64)});
  Var gb = global("gb", DataType::boolean(), {make_int(64)});
  Var s = shared("s", DataType::f32(), {64});
  Var r = reg("r", DataType::f32(), layout::spatial({32}));
  Var rb = reg("rb", DataType::boolean(), layout::spatial({32}));
  Program p = program(
      {
          st({g16}, mk<ViewGlobalInst>(make_var_ref(p1), DataType::f16(), g16->type.tensor->shape,
                                       std::vector<Expr>{}, std::nullopt)),
          st({gb}, mk<ViewGlobalInst>(make_var_ref(p2, L(3, 20)), DataType::boolean(), gb->type.tensor->shape,
                                      std::vector<Expr>{}, std::nullopt, L(3, 5))),
          alloc_shared(s),
          alloc(r),
          alloc(rb),
          st(mk<StoreGlobalInst>(arg(r), arg(g16), std::vector<Expr>{}, L(4, 5))),
          st(mk<AtomicAddGlobalInst>(arg(rb), arg(gb), std::vector<Expr>{}, L(5, 5))),
          st(mk<CopyAsyncInst>(arg(s), arg(g16), L(6, 5))),
      },
      {p1, p2});
  EXPECT_ERRORS(p, "3:5: ViewGlobal: 'p2' points to f32 but dtype=bool",
                "4:5: StoreGlobal: 'r' is f32 but 'g16' is f16; Cast it first",
                "5:5: AtomicAddGlobal: cannot add bool values",
                "6:5: CopyAsync: 's' is f32 but 'g16' is f16");
}

TEST(IrVerifier, AtomicAddOfStraddlingSubByteTypes) {
  Var p6 = pointer_var("p6", DataType::uint(6)), p4 = pointer_var("p4", DataType::uint(4));
  Var g6 = global("g6", DataType::uint(6), {make_int(64)});
  Var g4 = global("g4", DataType::uint(4), {make_int(64)});
  Var r6 = reg("r6", DataType::uint(6), layout::spatial({32}));
  Var r4 = reg("r4", DataType::uint(4), layout::spatial({32}));
  Program p = program(
      {
          st({g6}, mk<ViewGlobalInst>(make_var_ref(p6), DataType::uint(6), g6->type.tensor->shape,
                                      std::vector<Expr>{}, std::nullopt)),
          st({g4}, mk<ViewGlobalInst>(make_var_ref(p4), DataType::uint(4), g4->type.tensor->shape,
                                      std::vector<Expr>{}, std::nullopt)),
          alloc(r6), alloc(r4), st(mk<AtomicAddGlobalInst>(arg(r6), arg(g6), std::vector<Expr>{}, L(5, 5))),
          st(mk<AtomicAddGlobalInst>(arg(r4), arg(g4), std::vector<Expr>{}, L(6, 5))),  // fine: 4 divides 32
      },
      {p6, p4});
  EXPECT_ERRORS(p,
                "5:5: AtomicAddGlobal: u6 elements can straddle two 32-bit words, which no atomic covers; "
                "accumulate in a type of 1, 2, 4 or 8 or more bits");
}

// ---- View, Cast, out=, results

TEST(IrVerifier, ViewValidity) {
  Var a = reg("a", DataType::f16(), layout::compose(layout::spatial({8, 4}), layout::local({1, 8})));
  Program p = program(
      {
          alloc(a),
          st(mk<ViewInst>(arg(a), DataType::i8(), std::nullopt, L(3, 5))),
          st(mk<ViewInst>(arg(a), std::nullopt,
                          layout::compose(layout::spatial({4, 4}), layout::local({2, 8})), L(4, 5))),
          st(mk<ViewInst>(arg(a), DataType::uint(4),
                          layout::compose(layout::spatial({8, 4}), layout::local({1, 32})), L(5, 5))),
      },
      {}, 32);
  EXPECT_ERRORS(p, "3:5: View: each thread holds 128 bits of 'a' (8 x f16) but 64 bits in the view (8 x i8)",
                "4:5: layout has 16 threads but the program has 32",
                "4:5: View: 'a' has 32 threads (spatial(8, 4).local(1, 8)) but the new layout has 16 "
                "(spatial(4, 4).local(2, 8))",
                "4:5: View: each thread holds 128 bits of 'a' (8 x f16) but 256 bits in the view (16 x f16)");
}

TEST(IrVerifier, OutAndResults) {
  Layout l = layout::spatial({32});
  Var a = reg("a", DataType::f32(), l), h = reg("h", DataType::f16(), l),
      o = reg("o", DataType::f32(), layout::spatial({32}));
  Var wrong = reg("wrong", DataType::f16(), l);
  Var bi = scalar_var("bi"), bj = scalar_var("bj");
  Program p = program(
      {
          alloc(a),
          alloc(h),
          alloc(o),
          st(mk<CastInst>(arg(a), DataType::f16(), o, L(3, 5)), L(3, 5)),
          st({wrong},
             mk<ElementwiseInst>(ElementwiseOp::Add, std::vector<Operand>{top(a), sop(make_int(1))}, nullptr,
                                 L(4, 5)),
             L(4, 5)),
          st({o}, mk<ElementwiseInst>(ElementwiseOp::Add, std::vector<Operand>{top(a), top(a)}, a, L(5, 5)),
             L(5, 5)),
          st({bi, bj}, mk<BlockIndicesInst>(L(6, 5)), L(6, 5)),
          st({bi}, mk<SynchronizeInst>(L(7, 5)), L(7, 5)),
      },
      {}, 32);
  EXPECT_ERRORS(
      p, "3:5: Cast: out= 'o' is f32 but the result is f16",
      "4:5: 'wrong' is declared register f16[32] but Add gives register f32 with layout spatial(32)",
      "5:5: Add writes into 'a' (out=) and cannot also be assigned to a name",
      "6:5: BlockIndices gives 1 values (one per grid dimension) but 2 names receive them",
      "7:5: Synchronize gives 0 values but 1 names receive them");
}

// ---- elementwise

TEST(IrVerifier, ElementwiseTypes) {
  Layout l = layout::spatial({4, 8});
  Var f = reg("f", DataType::f32(), l), h = reg("h", DataType::f16(), l), i = reg("i", DataType::i32(), l),
      b = reg("b", DataType::boolean(), l);
  Program p = program(
      {
          alloc(f),
          alloc(h),
          alloc(i),
          alloc(b),
          st(mk<ElementwiseInst>(ElementwiseOp::Add, std::vector<Operand>{top(f), top(h)}, nullptr, L(3, 5))),
          st(mk<ElementwiseInst>(ElementwiseOp::Exp, std::vector<Operand>{top(i)}, nullptr, L(4, 5))),
          st(mk<ElementwiseInst>(ElementwiseOp::Where, std::vector<Operand>{top(f), top(f), top(f)}, nullptr,
                                 L(5, 5))),
          st(mk<ElementwiseInst>(ElementwiseOp::Mul, std::vector<Operand>{top(i), sop(make_float(0.5))},
                                 nullptr, L(6, 5))),
          st(mk<ElementwiseInst>(ElementwiseOp::Sub, std::vector<Operand>{top(b), top(b)}, nullptr, L(7, 5))),
          st(mk<ElementwiseInst>(ElementwiseOp::Add, std::vector<Operand>{sop(make_int(1)), sop(make_int(2))},
                                 nullptr, L(8, 5))),
          st(mk<ElementwiseInst>(ElementwiseOp::Neg, std::vector<Operand>{top(f), top(f)}, nullptr, L(9, 5))),
          // Valid: Mod on floats, a comparison giving bool, Where with a bool condition and a scalar.
          st(mk<ElementwiseInst>(ElementwiseOp::Mod, std::vector<Operand>{top(f), sop(make_float(2.0))})),
          st(mk<ElementwiseInst>(ElementwiseOp::Lt, std::vector<Operand>{top(i), sop(make_int(3))})),
          st(mk<ElementwiseInst>(ElementwiseOp::Where,
                                 std::vector<Operand>{top(b), top(f), sop(make_int(0))})),
      },
      {}, 32);
  EXPECT_ERRORS(
      p, "3:5: Add: a is f32 but b is f16", "4:5: Exp needs a float tensor, 'i' is i32; Cast it first",
      "5:5: Where: cond must be bool, 'f' is f32",
      "6:5: Mul: the scalar 0.5 is f32 and does not convert to i32", "7:5: Sub needs numbers, got bool",
      "8:5: Add needs at least one register tensor operand", "9:5: Neg takes 1 operand, got 2");
}

TEST(IrVerifier, ElementwiseBroadcast) {
  // a: thread t holds row t; col: thread t holds row t of a column vector (valid); row4: thread t holds only
  // element [0, t] of a row vector (invalid: thread t needs the whole row).
  Layout la = layout::compose(layout::spatial({4, 1}), layout::local({1, 4}));
  Var a = reg("a", DataType::f32(), la);
  Var col = reg("col", DataType::f32(), layout::spatial({4, 1}));
  Var row_all = reg("row_all", DataType::f32(), layout::compose(layout::replicate(4), layout::local({1, 4})));
  Var row4 = reg("row4", DataType::f32(), layout::spatial({1, 4}));
  Var other = reg("other", DataType::f32(), layout::compose(layout::spatial({1, 4}), layout::local({3, 1})));
  Var vec = reg("vec", DataType::f32(), layout::compose(layout::replicate(4), layout::local({4})));
  Program p = program(
      {
          alloc(a),
          alloc(col),
          alloc(row_all),
          alloc(row4),
          alloc(other),
          alloc(vec),
          st(mk<ElementwiseInst>(ElementwiseOp::Add, std::vector<Operand>{top(a), top(col)})),
          st(mk<ElementwiseInst>(ElementwiseOp::Add, std::vector<Operand>{top(row_all), top(a)})),
          st(mk<ElementwiseInst>(ElementwiseOp::Add, std::vector<Operand>{top(a), top(vec)})),
          st(mk<ElementwiseInst>(ElementwiseOp::Mul, std::vector<Operand>{top(a), top(row4)}, nullptr,
                                 L(3, 5))),
          st(mk<ElementwiseInst>(ElementwiseOp::Mul, std::vector<Operand>{top(a), top(other)}, nullptr,
                                 L(4, 5))),
          st(mk<ElementwiseInst>(ElementwiseOp::Max, std::vector<Operand>{top(col), top(row4)}, nullptr,
                                 L(5, 5))),
      },
      {}, 4);
  EXPECT_ERRORS(
      p,
      "3:5: Mul: thread 0 computes element [0, 1] of the result but does not hold element [0, 1] of b "
      "(layout spatial(1, 4))",
      "4:5: Mul: shapes [4, 4] and [3, 4] (b) do not broadcast",
      "5:5: Max: no operand has the broadcast shape [4, 4], so the result has no layout");
}

TEST(IrVerifier, ReduceDim) {
  Var a = reg("a", DataType::f32(), layout::spatial({4, 8}));
  Var b = reg("b", DataType::boolean(), layout::spatial({4, 8}));
  Var o = reg("o", DataType::f32(), layout::spatial({4, 8}));
  Program p = program(
      {
          alloc(a),
          alloc(b),
          alloc(o),
          st(mk<ReduceInst>(ReduceOp::Sum, arg(a), 2, false, nullptr, L(3, 5))),
          st(mk<ReduceInst>(ReduceOp::Max, arg(b), 1, false, nullptr, L(4, 5))),
          st(mk<ReduceInst>(ReduceOp::Sum, arg(a), 1, true, o, L(5, 5))),
          st(mk<ReduceInst>(ReduceOp::Sum, arg(a), 1, true)),
      },
      {}, 32);
  EXPECT_ERRORS(p, "3:5: ReduceSum: dim=2 is out of range for 'a' of rank 2",
                "4:5: ReduceMax needs numbers, got bool",
                "5:5: ReduceSum: out= 'o' has layout spatial(4, 8) but the result has layout "
                "spatial(4, 1).replicate(8)");
}

// ---- Dot

TEST(IrVerifier, DotShapesAndDtypes) {
  Var a = reg("a", DataType::f16(), layout::local({16, 32})),
      b = reg("b", DataType::f16(), layout::local({16, 8}));
  Var b2 = reg("b2", DataType::f16(), layout::local({32, 8})),
      c = reg("c", DataType::f32(), layout::local({16, 16}));
  Var c2 = reg("c2", DataType::f32(), layout::local({16, 8})),
      ci = reg("ci", DataType::i8(), layout::local({16, 8}));
  Var bb = reg("bb", DataType::bf16(), layout::local({32, 8})),
      v = reg("v", DataType::f16(), layout::local({32}));
  Program p = program(
      {
          alloc(a), alloc(b), alloc(b2), alloc(c), alloc(c2), alloc(ci), alloc(bb), alloc(v),
          st(mk<DotInst>(arg(a), arg(b), arg(c2), nullptr, L(3, 5))),
          st(mk<DotInst>(arg(a), arg(b2), arg(c), nullptr, L(4, 5))),
          st(mk<DotInst>(arg(a), arg(bb), arg(c2), nullptr, L(5, 5))),
          st(mk<DotInst>(arg(a), arg(b2), arg(ci), nullptr, L(6, 5))),
          st(mk<DotInst>(arg(v), arg(b2), arg(c2), nullptr, L(7, 5))),
          st(mk<DotInst>(arg(a), arg(b2), arg(c2), c2)),  // valid (SIMT, one thread)
      },
      {}, 1);
  EXPECT_ERRORS(p, "3:5: Dot: a is [16, 32] but b is [16, 8]; the inner dimensions must agree",
                "4:5: Dot: a @ b is [16, 8] but c is [16, 16]", "5:5: Dot: a is f16 but b is bf16",
                "6:5: Dot: a and b are f16 but c is i8; a float product accumulates in a float",
                "7:5: Dot: a is [32], b is [32, 8] and c is [16, 8]; every operand needs rank 2 or more");
}

TEST(IrVerifier, DotLayouts) {
  const auto& atom = atom_f16_f32();
  // MMA: two warps, each computing one 16x8 block of c from its 16 rows of a; b replicated over the warps.
  Layout la = layout::compose(layout::spatial({2, 1}), atom.layout_a);
  Layout lb = layout::compose(layout::replicate(2), atom.layout_b);
  Layout lc = layout::compose(layout::spatial({2, 1}), atom.layout_c);
  // Both warps compute both row blocks, but each holds one row block of a: neither MMA nor SIMT works.
  Layout lc_bad =
      layout::compose(layout::replicate(2), layout::compose(layout::local({2, 1}), atom.layout_c));
  Var a = reg("a", DataType::f16(), la), b = reg("b", DataType::f16(), lb), c = reg("c", DataType::f32(), lc);
  Var cbad = reg("cbad", DataType::f32(), lc_bad);
  // SIMT: thread t owns row t of a and of c and all of b (valid); column-owning c is not.
  Layout sa = layout::compose(layout::spatial({64, 1}), layout::local({1, 8}));
  Layout sb = layout::compose(layout::replicate(64), layout::local({8, 4}));
  Layout sc = layout::compose(layout::spatial({64, 1}), layout::local({1, 4}));
  Layout sc_bad = layout::compose(layout::spatial({16, 4}), layout::local({4, 1}));
  Var xa = reg("xa", DataType::f32(), sa), xb = reg("xb", DataType::f32(), sb),
      xc = reg("xc", DataType::f32(), sc);
  Var xcbad = reg("xcbad", DataType::f32(), sc_bad);
  Program p = program(
      {
          alloc(a),
          alloc(b),
          alloc(c),
          alloc(cbad),
          alloc(xa),
          alloc(xb),
          alloc(xc),
          alloc(xcbad),
          st(mk<DotInst>(arg(a), arg(b), arg(c), c)),
          st(mk<DotInst>(arg(xa), arg(xb), arg(xc), xc)),
          st(mk<DotInst>(arg(a), arg(b), arg(cbad), nullptr, L(3, 5))),
          st(mk<DotInst>(arg(xa), arg(xb), arg(xcbad), nullptr, L(4, 5))),
      },
      {}, 64);
  EXPECT_ERRORS(
      p,
      "3:5: Dot: the layouts divide no MMA atom, and for SIMT thread 0 computes c[0, 0] but does not hold "
      "a[0, 2]",
      "4:5: Dot: the layouts divide no MMA atom, and for SIMT thread 0 computes c[1, 0] but does not hold "
      "a[1, 0]");
}

// ---- control flow and lifetimes

TEST(IrVerifier, DefinitionsLoopsAndFrees) {
  Var n = scalar_var("n"), x = scalar_var("x", DataType::i32()), y = scalar_var("y"), i = scalar_var("i");
  Var s = shared("s", DataType::f16(), {16});
  Var s2 = shared("s2", DataType::f16(), {16});
  Layout rl = layout::spatial({16});
  Expr cond = make_binary(BinaryOp::Gt, make_var_ref(n), make_int(0));
  Program p = program(
      {
          std::make_shared<BreakStmt>(L(2, 5)),
          std::make_shared<IfStmt>(std::vector<Expr>{cond},
                                   std::vector<Block>{{std::make_shared<AssignStmt>(x, make_int(1), true)}},
                                   Block{std::make_shared<AssignStmt>(y, make_int(1), true)}, true),
          std::make_shared<AssignStmt>(n, make_var_ref(x, L(3, 9)), false, L(3, 5)),
          std::make_shared<ForStmt>(i, make_int(0), make_int(2), make_int(1),
                                    Block{std::make_shared<ContinueStmt>(), alloc_shared(s2)}),
          st(mk<FreeSharedInst>(s2, L(4, 5))),
          alloc_shared(s),
          st(mk<FreeSharedInst>(s, L(5, 5))),
          st(mk<LoadSharedInst>(TensorArg{s, {}, L(6, 16)}, rl)),
          st(mk<FreeSharedInst>(s, L(7, 5))),
          std::make_shared<ContinueStmt>(L(8, 5)),
      },
      {n}, 16);
  EXPECT_ERRORS(p, "2:5: 'break' outside a loop",
                "3:9: 'x' may be undefined here: it is defined inside a branch or loop that may not run",
                "4:5: 's2' may be undefined here: it is defined inside a branch or loop that may not run",
                "6:16: 's' is used after FreeShared at 5:5", "7:5: FreeShared: 's' is already freed at 5:5",
                "8:5: 'continue' outside a loop");
}

TEST(IrVerifier, BranchesThatLeaveDoNotLimitDefinitions) {
  Var n = scalar_var("n"), x = scalar_var("x"), y = scalar_var("y");
  Var s = shared("s", DataType::f16(), {16});
  Var i = scalar_var("i");
  Expr cond = make_binary(BinaryOp::Gt, make_var_ref(n), make_int(0));
  Program p = program(
      {
          std::make_shared<IfStmt>(std::vector<Expr>{cond},
                                   std::vector<Block>{{std::make_shared<ReturnStmt>()}},
                                   Block{std::make_shared<AssignStmt>(x, make_int(1), true)}, true),
          std::make_shared<AssignStmt>(y, make_var_ref(x), true),
          alloc_shared(s),
          std::make_shared<ForStmt>(i, make_int(0), make_int(2), make_int(1),
                                    Block{st(mk<FreeSharedInst>(s, L(5, 9)))}),
      },
      {n}, 1);
  EXPECT_ERRORS(
      p,
      "5:9: FreeShared: 's' is allocated outside this loop but freed inside it; the next iteration would "
      "use freed memory");
}

// ---- robustness: malformed programs never crash

TEST(IrVerifier, MalformedProgramsAreReportedNotCrashed) {
  Var notensor = make_var("t", ValueType{ValueKind::Tensor, DataType::f32(), nullptr});
  Var sc = scalar_var("sc");
  Var r = reg("r", DataType::f32(), layout::spatial({4}));
  TensorType nolayout;
  nolayout.scope = Scope::Register;
  nolayout.shape = {make_int(4)};
  Var rn = make_var("rn", ValueType::tensor_of(nolayout));
  Program p = program(
      {
          nullptr,
          std::make_shared<InstStmt>(std::vector<Var>{}, nullptr, L(2, 1)),
          std::make_shared<AssignStmt>(nullptr, nullptr, true, L(3, 1)),
          std::make_shared<IfStmt>(std::vector<Expr>{nullptr}, std::vector<Block>{}, Block{}, false, L(4, 1)),
          std::make_shared<IfStmt>(std::vector<Expr>{nullptr}, std::vector<Block>{{}}, Block{}, false,
                                   L(5, 1)),
          std::make_shared<ForStmt>(nullptr, nullptr, nullptr, nullptr, Block{}, L(6, 1)),
          std::make_shared<WhileStmt>(nullptr, Block{}, L(7, 1)),
          alloc(r),
          st(mk<ElementwiseInst>(ElementwiseOp::Add, std::vector<Operand>{Operand{}, top(notensor)}, nullptr,
                                 L(8, 1))),
          st(mk<DotInst>(arg(nullptr), arg(sc), arg(rn), nullptr, L(9, 1))),
          st(mk<ViewGlobalInst>(nullptr, DataType::f16(), std::vector<Expr>{nullptr},
                                std::vector<Expr>{nullptr}, std::nullopt, L(10, 1))),
          st(mk<ViewGlobalInst>(make_int(3), DataType::f16(), std::vector<Expr>{make_int(4)},
                                std::vector<Expr>{}, std::nullopt, L(11, 1))),
          st(mk<LoadGlobalInst>(arg(nullptr), layout::spatial({4}), std::vector<Expr>{nullptr}, nullptr,
                                L(12, 1))),
          st(mk<CopyAsyncWaitGroupInst>(nullptr, L(13, 1))),
          st(mk<FreeSharedInst>(nullptr, L(14, 1))),
          st(mk<PrintInst>(Operand{}, L(15, 1))),
          st(mk<ReduceInst>(ReduceOp::Sum, arg(notensor), -1, false, nullptr, L(16, 1))),
          st(mk<CastInst>(TensorArg{r, {Slice{Slice::Kind::Index, nullptr}}, {}}, DataType::f16(), nullptr,
                          L(17, 1))),
          st(mk<StoreGlobalInst>(arg(r), arg(rn), std::vector<Expr>{}, L(18, 1))),
          st(mk<ViewInst>(arg(rn), DataType::f16(), std::nullopt, L(19, 1))),
      },
      {nullptr, sc}, 0, {});
  Diagnostics d;
  EXPECT_FALSE(verify_program(p, d));
  EXPECT_GE(d.error_count(), 18);
  for (const Diagnostic& x : d.all()) EXPECT_FALSE(x.message.empty());
}

TEST(IrVerifier, UseBeforeDefinitionInStraightLineCode) {
  Var a = reg("a", DataType::f32(), layout::spatial({4}));
  Var b = reg("b", DataType::f32(), layout::spatial({4}));
  Program p = program(
      {
          st({b}, mk<CastInst>(TensorArg{a, {}, L(2, 14)}, DataType::f32(), nullptr, L(2, 9)), L(2, 5)),
          alloc(a),
      },
      {}, 4);
  EXPECT_ERRORS(p, "2:14: 'a' is used before it is defined");
}

}  // namespace
}  // namespace tilevm::ir
