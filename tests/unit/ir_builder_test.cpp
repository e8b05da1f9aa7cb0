// The C++ builder (ir/builder.h): the statements and types it makes, scalar expressions, views, control
// flow, and every misuse it rejects with a clear tilevm::Error. Printing built programs and comparing them
// with the parsed .tile files is in example_builder_test.cpp.
#include "tilevm/ir/builder.h"

#include <gtest/gtest.h>

#include "tilevm/ir/parser.h"
#include "tilevm/ir/printer.h"
#include "tilevm/ir/verifier.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/support/error.h"

#include "expect_error.h"

namespace tilevm::ir {
namespace {

const DataType f16 = DataType::f16(), f32 = DataType::f32(), u8 = DataType::u8(), i6 = DataType::int_(6);

const layout::Layout& layout_a() {
  static const layout::Layout l = layout::parse_layout("column_local(2, 2).spatial(8, 4).local(1, 2)");
  return l;
}
const layout::Layout& layout_b() {
  static const layout::Layout l = layout::parse_layout("local(2, 1).column_spatial(4, 8).local(2, 1)");
  return l;
}
const layout::Layout& layout_c() {
  static const layout::Layout l = layout::parse_layout("local(2, 1).spatial(8, 4).local(1, 2)");
  return l;
}

TEST(Builder, Figure2StatementsAndTypes) {
  ProgramBuilder pb("matmul");
  pb.named_layout("layout_c", layout_c());
  Pointer a_ptr = pb.pointer_param("a_ptr", f16);
  Pointer b_ptr = pb.pointer_param("b_ptr", u8);
  pb.grid({4, 8});
  auto [bi, bj] = pb.block_indices("bi", "bj");
  Tensor ga = pb.view_global("ga", a_ptr, f16, {64, 64});
  Tensor gb = pb.view_global("gb", b_ptr, u8, {4, 8, 96});
  Tensor acc = pb.allocate_register("acc", f32, layout_c(), 0.0);
  pb.for_range("k", 4, [&, bi = bi, bj = bj](Scalar k) {  // clang 14: no captured structured bindings
    Tensor a = pb.load_global("a", ga, layout_a(), {bi * 16, k * 16});
    Tensor bytes = pb.load_global("b_bytes", gb, layout::parse_layout("local(3).spatial(32)"), {k, bj, 0});
    Tensor b = pb.view("b", bytes, i6, layout_b());
    EXPECT_EQ(b.dtype(), i6);
    b = pb.cast("b", b, f16);
    Tensor d = pb.dot(out(acc), a, b, acc);
    EXPECT_EQ(d.var(), acc.var());
  });
  Program p = pb.build();

  EXPECT_EQ(p.name, "matmul");
  ASSERT_EQ(p.grid.size(), 2u);
  EXPECT_EQ(as_const_int(p.grid[1]), 8);
  ASSERT_EQ(p.params.size(), 2u);
  EXPECT_TRUE(p.params[0]->type.is_pointer());
  EXPECT_EQ(p.params[0]->type.dtype, f16);
  ASSERT_EQ(p.layouts.size(), 1u);
  EXPECT_EQ(p.layouts[0].first, "layout_c");

  ASSERT_EQ(p.body.size(), 5u);
  const auto* indices = p.body[0]->as<InstStmt>();
  ASSERT_TRUE(indices);
  ASSERT_EQ(indices->results.size(), 2u);
  EXPECT_EQ(indices->results[1]->name, "bj");
  EXPECT_EQ(indices->results[1]->type.dtype, DataType::i32());

  const auto* alloc = p.body[3]->as<InstStmt>();
  ASSERT_TRUE(alloc);
  const Var& acc_var = alloc->results.at(0);
  EXPECT_EQ(to_string(acc_var->type), "register f32[16, 8]");
  EXPECT_EQ(*acc_var->type.tensor->layout, layout_c());
  const auto* init = alloc->inst->as<AllocateRegisterInst>()->init->as<FloatImm>();
  ASSERT_TRUE(init);
  EXPECT_EQ(init->value, 0.0);

  const auto* loop = p.body[4]->as<ForStmt>();
  ASSERT_TRUE(loop);
  EXPECT_EQ(loop->var->name, "k");
  EXPECT_EQ(as_const_int(loop->start), 0);
  EXPECT_EQ(as_const_int(loop->stop), 4);
  EXPECT_EQ(as_const_int(loop->step), 1);
  ASSERT_EQ(loop->body.size(), 5u);
  const auto* view = loop->body[2]->as<InstStmt>();
  EXPECT_EQ(to_string(view->results.at(0)->type), "register i6[16, 8]");
  const auto* cast = loop->body[3]->as<InstStmt>();
  EXPECT_EQ(to_string(cast->results.at(0)->type), "register f16[16, 8]");
  EXPECT_NE(cast->results.at(0), view->results.at(0));  // a rebinding is a new variable
  const auto* dot = loop->body[4]->as<InstStmt>();
  EXPECT_TRUE(dot->results.empty());  // out= statements are bare
  EXPECT_EQ(dot->inst->as<DotInst>()->out, acc_var);
  EXPECT_EQ(dot->inst->as<DotInst>()->b.tensor, cast->results.at(0));
  // The load's offset is bi * 16 with bi the BlockIndices result.
  const auto* load = loop->body[0]->as<InstStmt>()->inst->as<LoadGlobalInst>();
  const auto* mul = load->offset.at(0)->as<BinaryExpr>();
  ASSERT_TRUE(mul);
  EXPECT_EQ(mul->op, BinaryOp::Mul);
  EXPECT_EQ(mul->a->as<VarRef>()->var, indices->results[0]);
  EXPECT_EQ(as_const_int(mul->b), 16);
}

TEST(Builder, ScalarExpressions) {
  Scalar six = 6;
  EXPECT_EQ((six * 7).as_int(), 42);
  EXPECT_EQ((Scalar(7) / 2).as_int(), 3);
  EXPECT_EQ((Scalar(-7) / 2).as_int(), -3);  // truncating, as in C
  EXPECT_EQ((Scalar(-7) % 2).as_int(), -1);
  EXPECT_EQ(ceil_div(7, 2).as_int(), 4);
  EXPECT_EQ(min(3, 5).as_int(), 3);
  EXPECT_EQ(Scalar(6).dtype(), DataType::i32());
  EXPECT_EQ(Scalar(int64_t{1} << 40).dtype(), DataType::i64());
  EXPECT_EQ(Scalar(1.5).dtype(), f32);
  EXPECT_EQ((Scalar(1) + 0.5).dtype(), f32);

  ProgramBuilder pb("p");
  Scalar n = pb.scalar_param("n", DataType::i32());
  Scalar e = (n + 1) * 2;
  EXPECT_FALSE(e.as_int());
  EXPECT_EQ((n < 4).dtype(), DataType::boolean());
  EXPECT_EQ(logical_and(n<4, n> 0).dtype(), DataType::boolean());
  EXPECT_EQ(logical_not(n == 0).dtype(), DataType::boolean());
  Scalar unset;
  EXPECT_FALSE(unset.is_set());
  expect_error([&] { (void)(unset + 1); }, "unset Scalar");
}

TEST(Builder, ViewsOfSharedAndGlobalTensors) {
  ProgramBuilder pb("p");
  Pointer ptr = pb.pointer_param("x_ptr", f16);
  pb.grid({1});
  Tensor g = pb.view_global("g", ptr, f16, {64, 256});
  Tensor s = pb.allocate_shared("s", f16, layout::parse_layout("local(3, 16, 64)"));
  EXPECT_EQ(s.scope(), Scope::Shared);
  EXPECT_EQ(s.rank(), 3);
  Scalar stage = pb.let("stage", 1);
  TensorRef v = s(stage, all, from(32));
  ASSERT_EQ(v.arg().slices.size(), 3u);
  EXPECT_EQ(v.arg().slices[0].kind, Slice::Kind::Index);
  EXPECT_EQ(v.arg().slices[1].kind, Slice::Kind::Full);
  EXPECT_EQ(v.arg().slices[2].kind, Slice::Kind::Offset);
  EXPECT_EQ(as_const_int(v.arg().slices[2].value), 32);
  EXPECT_EQ(s[0].arg().slices.size(), 1u);
  pb.copy_async(s[stage], g(from(16), from(64)));
  pb.copy_async_commit_group();
  pb.copy_async_wait_group(0);
  pb.synchronize();
  Tensor r = pb.load_shared("r", s[stage], layout::parse_layout("spatial(16, 8).local(1, 8)"));
  EXPECT_EQ(to_string(r.var()->type), "register f16[16, 64]");
  // A layout argument may be given as text.
  Tensor r2 = pb.load_shared("r2", s[stage], "spatial(16, 8).repeat(1, 8)");
  EXPECT_EQ(*r2.layout(), *r.layout());
  expect_error([&] { pb.load_shared("r3", s[stage], "spatial(16, 8"); }, "invalid layout");
  expect_error([&] { (void)s(0, 0, 0, 0); }, "rank 3 but the view has 4 subscripts");
  expect_error([&] { (void)r[0]; }, "register tensors cannot be sliced: 'r'");
  Program p = pb.build();
  EXPECT_EQ(p.body.size(), 9u);
}

// view_global(..., auto_layout) is the text's `layout=auto`: the tile layer chooses the layout.
TEST(Builder, AutoLayoutOfAGlobalView) {
  ProgramBuilder pb("p");
  Pointer ptr = pb.pointer_param("x_ptr", f16);
  pb.grid({1});
  Tensor g = pb.view_global("g", ptr, f16, {64, 256}, auto_layout);
  EXPECT_FALSE(g.layout());
  const std::string text = print_program(pb.build());
  EXPECT_NE(text.find("g = ViewGlobal(x_ptr, dtype=f16, shape=[64, 256], layout=auto)"), std::string::npos)
      << text;
}

TEST(Builder, ControlFlow) {
  ProgramBuilder pb("p");
  Scalar n = pb.scalar_param("n", DataType::i32());
  pb.grid({1});
  Scalar x = pb.let("x", 0);
  Scalar wide = pb.let("wide", 0, DataType::i64());
  EXPECT_EQ(wide.dtype(), DataType::i64());
  pb.while_(x < n, [&] {
    pb.if_(x == 3, [&] { pb.break_(); }).elif_(x == 4, [&] { pb.continue_(); }).else_([&] {
      pb.assign(x, x + 2);
    });
    pb.assign(x, x + 1);
  });
  pb.for_range("i", 2, 10, 3, [&](Scalar i) { pb.if_(i > 5, [&] { pb.return_(); }); });
  Program p = pb.build();
  ASSERT_EQ(p.body.size(), 4u);
  const auto* def = p.body[0]->as<AssignStmt>();
  ASSERT_TRUE(def);
  EXPECT_TRUE(def->defines);
  const auto* loop = p.body[2]->as<WhileStmt>();
  ASSERT_TRUE(loop);
  ASSERT_EQ(loop->body.size(), 2u);
  const auto* chain = loop->body[0]->as<IfStmt>();
  ASSERT_TRUE(chain);
  EXPECT_EQ(chain->conditions.size(), 2u);
  EXPECT_TRUE(chain->has_else);
  EXPECT_EQ(chain->bodies[0].at(0)->kind, StmtKind::Break);
  EXPECT_EQ(chain->bodies[1].at(0)->kind, StmtKind::Continue);
  const auto* update = chain->else_body.at(0)->as<AssignStmt>();
  ASSERT_TRUE(update);
  EXPECT_FALSE(update->defines);
  EXPECT_EQ(update->var, def->var);  // an update keeps the variable
  const auto* f = p.body[3]->as<ForStmt>();
  ASSERT_TRUE(f);
  EXPECT_EQ(as_const_int(f->start), 2);
  EXPECT_EQ(as_const_int(f->step), 3);
  EXPECT_EQ(f->body.at(0)->as<IfStmt>()->bodies[0].at(0)->kind, StmtKind::Return);
}

TEST(Builder, ElementwiseReduceAndOut) {
  ProgramBuilder pb("p");
  pb.grid({1});
  Tensor x = pb.allocate_register("x", f32, layout_c(), 1.0);
  Tensor y = pb.mul("y", x, 2.0);
  EXPECT_EQ(to_string(y.var()->type), "register f32[16, 8]");
  Tensor z = pb.add(out(y), y, x);
  EXPECT_EQ(z.var(), y.var());
  Tensor lt = pb.lt("m", y, 0.5);
  EXPECT_EQ(lt.dtype(), DataType::boolean());
  Tensor w = pb.where("w", lt, x, y);
  EXPECT_EQ(w.dtype(), f32);
  Tensor s = pb.reduce_sum("s", w, 1);
  EXPECT_EQ(*s.layout(), layout::reduce(layout_c(), {1}));
  Tensor k = pb.reduce_max("k", w, 1, /*keepdim=*/true);
  EXPECT_EQ(to_string(k.var()->type), "register f32[16, 1]");
  Tensor e = pb.exp("e", w);
  pb.print(e);
  pb.print(Scalar(3));
  Program p = pb.build();
  EXPECT_EQ(p.body.size(), 10u);
  expect_error([&] { pb.elementwise("q", ElementwiseOp::Add, {x}); }, "Add takes 2 operands, got 1");
  expect_error([&] { pb.reduce_sum("q", w, 2); }, "dim=2 is out of range");
}

TEST(Builder, RejectsTensorsOfTheWrongScope) {
  ProgramBuilder pb("p");
  Pointer ptr = pb.pointer_param("x_ptr", f16);
  pb.grid({1});
  Tensor g = pb.view_global("g", ptr, f16, {16, 16});
  Tensor s = pb.allocate_shared("s", f16, std::vector<Scalar>{16, 16});
  Tensor r = pb.load_global("r", g, layout_a());
  expect_error([&] { pb.load_global("q", s, layout_a()); },
               "the source of LoadGlobal must be a global tensor, 's' is shared f16[16, 16]");
  expect_error([&] { pb.load_shared("q", g, layout_a()); },
               "the source of LoadShared must be a shared tensor");
  expect_error([&] { pb.store_global(r, s); }, "the destination of StoreGlobal must be a global tensor");
  expect_error([&] { pb.store_shared(g, s); },
               "the source of StoreShared must be a register tensor, 'g' is global");
  expect_error([&] { pb.copy_async(g, s); }, "the destination of CopyAsync must be a shared tensor");
  expect_error([&] { pb.cast("q", g, f32); }, "the operand of Cast must be a register tensor");
  expect_error([&] { pb.dot(out(r), r, g, r); }, "operand b of Dot must be a register or shared tensor");
  expect_error([&] { pb.dot_async(s, r, r); }, "operand b of DotAsync must be a shared tensor");
  expect_error([&] { pb.add(out(g), r, r); }, "out of Add must be a register tensor");
  expect_error([&] { pb.free_shared(g); }, "the operand of FreeShared must be a shared tensor");
  expect_error([&] { pb.allocate_shared("q", f16, layout_c()); }, "a shared layout has one thread");
  expect_error([&] { pb.view("q", r, DataType::u8(), layout::parse_layout("local(3).spatial(32)")); },
               "View changes the bits per thread from 128 (8 x f16) to 24 (3 x u8)");
}

TEST(Builder, RejectsNamesThatCannotBeRebound) {
  ProgramBuilder pb("p");
  pb.named_layout("layout_c", layout_c());
  pb.constant("BM", 16);
  Pointer ptr = pb.pointer_param("x_ptr", f16);
  pb.grid({1});
  Tensor g = pb.view_global("g", ptr, f16, {16, 8});
  Tensor acc = pb.allocate_register("acc", f32, layout_c(), 0.0);
  Tensor acc16 = pb.cast("acc", acc, f16);  // rebinding a tensor name is fine...
  pb.store_global(acc16, g);
  // ...but the old handle now names the new tensor in the text, so using it is an error.
  expect_error([&] { pb.cast("c", acc, f16); },
               "'acc' (register f32[16, 8]) refers to a definition that a later 'acc' = ... rebound "
               "(now register f16[16, 8])");
  Scalar x = pb.let("x", 1);
  expect_error([&] { pb.let("x", 2); },
               "'x' is already a scalar variable (i32): a second `x = ...` updates it");
  expect_error([&] { pb.allocate_register("layout_c", f32, layout_c()); }, "it is a named layout");
  expect_error([&] { pb.let("BM", 1); }, "it is a constant");
  expect_error([&] { pb.let("x_ptr", 1); }, "it is a parameter");
  expect_error([&] { pb.pointer_param("x_ptr", f16); }, "it is a parameter");
  expect_error([&] { pb.let("for", 1); }, "it is a keyword or a type name");
  expect_error([&] { pb.let("f16", 1); }, "it is a keyword or a type name");
  expect_error([&] { pb.let("2x", 1); }, "expected an identifier");
  expect_error([&] { pb.assign(x + 1, 2); }, "assign() needs a scalar variable");
  // A handle from another builder is not a variable of this program.
  ProgramBuilder other("q");
  Scalar n = other.scalar_param("n", DataType::i32());
  expect_error([&] { pb.let("y", n + 1); }, "'n' is not a variable of program 'p'");
}

TEST(Builder, RejectsMisplacedControlFlow) {
  ProgramBuilder pb("p");
  expect_error([&] { pb.block_indices("bi"); }, "call grid() first");
  expect_error([&] { (void)pb.build(); }, "has no grid");
  pb.grid({2, 2});
  expect_error([&] { pb.grid({2}); }, "already set");
  expect_error([&] { pb.block_indices("bi"); },
               "BlockIndices gives 2 values (one per grid dimension), got 1 names");
  expect_error([&] { pb.break_(); }, "break_ outside a loop");
  expect_error([&] { pb.continue_(); }, "continue_ outside a loop");
  Scalar x = pb.let("x", 0);
  IfChain chain = pb.if_(x == 0, [&] { pb.assign(x, 1); });
  pb.assign(x, 2);
  expect_error([&] { chain.else_([&] {}); }, "else_ must directly follow its if_");
  IfChain chain2 = pb.if_(x == 0, [&] {});
  chain2.else_([&] {});
  expect_error([&] { chain2.else_([&] {}); }, "at most one else_");
  expect_error([&] { chain2.elif_(x == 1, [&] {}); }, "elif_ after else_");
  // An error inside a body leaves the builder usable.
  expect_error([&] { pb.for_range("i", 4, [&](Scalar) { pb.let("x", 1); }); }, "use assign()");
  pb.for_range("i", 4, [&](Scalar) { pb.break_(); });
  EXPECT_EQ(pb.build().body.size(), 5u);
  expect_error([&] { pb.copy_async_wait_group(x); }, "needs a constant count");
}

TEST(Builder, BarriersAndTmaCopiesPrintAsTheirText) {
  ProgramBuilder pb("tma");
  Pointer x_ptr = pb.pointer_param("x_ptr", f16);
  pb.grid({1});
  pb.threads(32);
  Tensor gx = pb.view_global("gx", x_ptr, f16, {32, 8});
  Tensor tiles = pb.allocate_shared("tiles", f16, {2, 8, 8});
  Tensor full = pb.allocate_barrier("full", 1, 2);
  pb.barrier_arrive(full[0], 128);
  pb.copy_tma(tiles[0], gx(from(8), all), full[0]);
  pb.barrier_wait(full[0], 0);
  pb.store_tma(tiles[0], gx(from(16), all));
  pb.store_tma_wait(0);
  const std::string text = print_program(pb.build());
  EXPECT_NE(text.find("    full = AllocateBarrier(count=1, shape=[2])\n"
                      "    BarrierArrive(full[0], tx=128)\n"
                      "    CopyTma(tiles[0], gx[8:, :], barrier=full[0])\n"
                      "    BarrierWait(full[0], parity=0)\n"
                      "    StoreTma(tiles[0], gx[16:, :])\n"
                      "    StoreTmaWait(0)\n"),
            std::string::npos)
      << text;
  expect_error([&] { pb.store_tma(gx, tiles[0]); }, "the source of StoreTma");
  expect_error([&] { pb.barrier_arrive(tiles[0]); }, "the barrier of BarrierArrive");
  expect_error([&] { pb.copy_tma(tiles[1], gx, tiles[0]); }, "the barrier of CopyTma");
  expect_error([&] { pb.allocate_barrier("none", 1, 0); }, "needs at least one barrier");
}

TEST(Builder, RegionsPrintAsTheirText) {
  ProgramBuilder pb("regions");
  Pointer x_ptr = pb.pointer_param("x_ptr", f32);
  pb.grid({1});
  pb.threads(256);
  Tensor gx = pb.view_global("gx", x_ptr, f32, {128});
  Tensor full = pb.allocate_barrier("full", 1, 1);
  Scalar n = pb.let("n", 2);
  const layout::Layout lay = layout::parse_layout("spatial(128)");
  pb.warpgroups(0, 1, [&] {
    Tensor x = pb.load_global("x", gx, lay);
    pb.store_global(x, gx);
    pb.barrier_arrive(full);
  });
  pb.warpgroups(1, 2, [&] {
    Scalar m = pb.let("n", n + 1);  // the region's own n
    pb.barrier_wait(full, 0);
    Tensor x = pb.load_global("x", gx, lay);
    pb.print(x);
    pb.print(m);
    expect_error([&] { pb.break_(); }, "outside a loop");
  });
  pb.print(n);  // the block's n again
  pb.warpgroups(0, 2, 232,
                [&] { pb.load_global("y", gx, layout::parse_layout("replicate(2).spatial(128)")); });
  const std::string text = print_program(pb.build());
  EXPECT_NE(text.find("    n = 2\n"
                      "    with Warpgroups(0, 1):\n"
                      "        x = LoadGlobal(gx, spatial(128))\n"
                      "        StoreGlobal(x, gx)\n"
                      "        BarrierArrive(full)\n"
                      "    with Warpgroups(1, 2):\n"
                      "        n = n + 1\n"
                      "        BarrierWait(full, parity=0)\n"
                      "        x = LoadGlobal(gx, spatial(128))\n"
                      "        Print(x)\n"
                      "        Print(n)\n"
                      "    Print(n)\n"
                      "    with Warpgroups(0, 2, registers=232):\n"
                      "        y = LoadGlobal(gx, replicate(2).spatial(128))\n"),
            std::string::npos)
      << text;
  // It verifies, and its text parses back to the same program.
  Diagnostics diags;
  EXPECT_TRUE(verify_program(pb.build(), diags)) << diags.render("regions", text);
  const std::optional<Program> parsed = parse_program(text, diags);
  ASSERT_TRUE(parsed) << diags.render("regions", text);
  EXPECT_EQ(print_program(*parsed), text);
}

}  // namespace
}  // namespace tilevm::ir
