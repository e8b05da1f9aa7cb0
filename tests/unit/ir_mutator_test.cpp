// IRMutator (include/tilevm/ir/mutator.h): an unchanged subtree comes back as the same node (pointer
// equality), and a statement is rebuilt exactly where one of its parts changed, keeping the rest shared.
#include <gtest/gtest.h>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/mutator.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/printer.h"

namespace tilevm::ir {
namespace {

constexpr const char* kSource = R"(la = spatial(32)

def m<1>[threads=32](f32* x_ptr, i32 n):
    g = ViewGlobal(x_ptr, dtype=f32, shape=[64])
    a = LoadGlobal(g, la)
    for k in range(0, n, unroll=2, stages=3):
        b = LoadGlobal(g, la, offset=[k])
        c = Add(a, b)
        StoreGlobal(c, g, offset=[32])
    if n > 4:
        StoreGlobal(a, g)
    else:
        Print(n)
    j = 0
    while j < n:
        j = j + 7
    StoreGlobal(a, g)
)";

Program parse(const char* source) {
  Diagnostics diags;
  std::optional<Program> p = parse_program(source, diags);
  if (!p) throw std::runtime_error(diags.render("m.tile", source));
  return *p;
}

const ForStmt& loop_of(const Program& p) {
  return *p.body[2]->as<ForStmt>();
}

TEST(IrMutator, AnIdentityMutationSharesEveryStatement) {
  const Program p = parse(kSource);
  IRMutator identity;
  const Program q = identity.mutate_program(p);
  ASSERT_EQ(q.body.size(), p.body.size());
  for (size_t k = 0; k < p.body.size(); ++k) EXPECT_EQ(q.body[k], p.body[k]) << "statement " << k;
  EXPECT_TRUE(same_nodes(q.body, p.body));
  // Instructions are shared too, not only their statements.
  for (const Stmt& s : p.body) {
    if (const auto* i = s->as<InstStmt>()) {
      EXPECT_EQ(identity.mutate_inst(i->inst), i->inst);
    }
  }
}

// Replaces one variable by another of the same type.
class Rename : public IRMutator {
 public:
  Rename(Var from, Var to) : from_(std::move(from)), to_(std::move(to)) {}
  Var mutate_var(const Var& v) override { return v == from_ ? to_ : v; }

 private:
  Var from_, to_;
};

TEST(IrMutator, RebuildsOnlyThePathToAChange) {
  const Program p = parse(kSource);
  const ForStmt& loop = loop_of(p);
  const Var k2 = make_var("k2", loop.var->type);
  const Program q = Rename(loop.var, k2).mutate_program(p);
  ASSERT_EQ(q.body.size(), p.body.size());
  // The loop defines and uses k: it and the load that reads k are new nodes...
  EXPECT_NE(q.body[2], p.body[2]);
  const ForStmt& renamed = loop_of(q);
  EXPECT_EQ(renamed.var, k2);
  EXPECT_NE(renamed.body[0], loop.body[0]);
  EXPECT_EQ(renamed.attrs, loop.attrs);  // attributes survive a rebuild
  // ...its other statements and every statement outside it are the old nodes.
  EXPECT_EQ(renamed.body[1], loop.body[1]);
  EXPECT_EQ(renamed.body[2], loop.body[2]);
  for (size_t k : {0, 1, 3, 4, 5, 6}) EXPECT_EQ(q.body[k], p.body[k]) << "statement " << k;
  EXPECT_NE(print_program(q).find("offset=[k2]"), std::string::npos);
  EXPECT_NE(print_program(q).find("for k2 in range(n, unroll=2, stages=3):"), std::string::npos);
}

// Replaces the integer constant `from` by `to` in every expression.
class Replace : public IRMutator {
 public:
  Replace(int64_t from, int64_t to) : from_(from), to_(to) {}
  Expr mutate_expr(const Expr& e) override {
    if (as_const_int(e) == from_) return make_int(to_, e->loc);
    return IRMutator::mutate_expr(e);
  }

 private:
  int64_t from_, to_;
};

TEST(IrMutator, RebuildsAnIfWhoseConditionChangedAndSharesItsBodies) {
  const Program p = parse(kSource);
  const Program q = Replace(4, 5).mutate_program(p);
  const auto* before = p.body[3]->as<IfStmt>();
  const auto* after = q.body[3]->as<IfStmt>();
  ASSERT_TRUE(before && after);
  EXPECT_NE(after, before);
  EXPECT_TRUE(same_nodes(after->bodies[0], before->bodies[0]));
  EXPECT_TRUE(same_nodes(after->else_body, before->else_body));
  EXPECT_TRUE(after->has_else);
  EXPECT_NE(print_program(q).find("if n > 5:"), std::string::npos);
  for (size_t k : {0, 1, 2, 4, 5, 6}) EXPECT_EQ(q.body[k], p.body[k]) << "statement " << k;
}

TEST(IrMutator, RebuildsAWhileWhoseBodyChanged) {
  const Program p = parse(kSource);
  const Program q = Replace(7, 8).mutate_program(p);  // j = j + 7 becomes j = j + 8
  EXPECT_NE(q.body[5], p.body[5]);
  EXPECT_EQ(q.body[5]->as<WhileStmt>()->condition, p.body[5]->as<WhileStmt>()->condition);
  EXPECT_NE(print_program(q).find("j = j + 8"), std::string::npos);
  for (size_t k : {0, 1, 2, 3, 4, 6}) EXPECT_EQ(q.body[k], p.body[k]) << "statement " << k;
}

// Deletes every Print.
class DropPrints : public IRMutator {
 public:
  Stmt mutate_inst_stmt(const Stmt& s, const InstStmt& node) override {
    return node.inst->as<PrintInst>() ? nullptr : IRMutator::mutate_inst_stmt(s, node);
  }
};

TEST(IrMutator, DeletingAStatementRebuildsItsBlockOnly) {
  const Program p = parse(kSource);
  const Program q = DropPrints().mutate_program(p);
  const auto* before = p.body[3]->as<IfStmt>();
  const auto* after = q.body[3]->as<IfStmt>();
  EXPECT_NE(after, before);
  EXPECT_TRUE(after->else_body.empty());
  EXPECT_TRUE(same_nodes(after->bodies[0], before->bodies[0]));
  EXPECT_EQ(q.body[2], p.body[2]);
}

}  // namespace
}  // namespace tilevm::ir
