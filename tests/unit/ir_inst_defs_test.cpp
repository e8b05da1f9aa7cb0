// The instruction table (ir/inst/inst_def.h) against the code that reads it: every row has a construction,
// every node class and op has a row, every row parses, prints and round-trips with each of its parameters,
// the node-to-arguments direction agrees with the node's own for_each_expr, and reads()/writes() are the
// accesses the table states.
#include <gtest/gtest.h>

#include <set>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/printer.h"
#include "tilevm/support/error.h"

namespace tilevm::ir {
namespace {

// A sample argument of each kind, valid for parsing in kProgram below (not necessarily for the verifier).
std::string sample(ParamKind kind) {
  switch (kind) {
    case ParamKind::Tensor:
    case ParamKind::Operand:
    case ParamKind::TensorVar:
      return "r";
    case ParamKind::Scalar:
      return "1";
    case ParamKind::Pointer:
      return "p";
    case ParamKind::DType:
      return "f32";
    case ParamKind::Layout:
      return "L";
    case ParamKind::List:
      return "[4, 4]";
    case ParamKind::Int:
      return "0";
    case ParamKind::Bool:
      return "True";
  }
  return "?";
}

std::string program_with(const std::string& stmt) {
  return "L = spatial(2, 2).local(1, 2)\n\ndef k<1>[threads=4](f32* p):\n    r = AllocateRegister(f32, "
         "layout=L)\n"
         "    " +
         stmt + "\n";
}

// The call with the required parameters positionally and `extra` (an optional parameter) by name.
std::string call(const InstDef& def, int extra) {
  std::string args;
  for (size_t i = 0; i < def.params.size(); ++i) {
    const Param& p = def.params[i];
    const bool given = p.required || static_cast<int>(i) == extra;
    if (!given) continue;
    args += args.empty() ? "" : ", ";
    if (!p.required || p.keyword_only) args += std::string(p.name) + "=";
    args += sample(p.kind);
  }
  std::string text = def.name + "(" + args + ")";
  const bool out_given = extra >= 0 && std::string(def.params[static_cast<size_t>(extra)].name) == "out";
  if (def.results == Results::Two && !out_given)
    text = "x, y = " + text;
  else if (def.results != Results::None && !out_given)
    text = "x = " + text;
  return text;
}

std::optional<Program> parse(const std::string& text) {
  Diagnostics diags;
  auto p = parse_program(text, diags);
  if (!p) ADD_FAILURE() << diags.render("input", text);
  return p;
}

// The expressions an argument holds, in the order for_each_expr visits them.
void exprs_of(ParamKind kind, const ArgValue& v, std::vector<const ExprNode*>& out) {
  if (!v.present) return;
  auto tensor = [&](const TensorArg& t) {
    for (const Slice& s : t.slices)
      if (s.value) out.push_back(s.value.get());
  };
  switch (kind) {
    case ParamKind::Tensor:
      tensor(v.tensor);
      break;
    case ParamKind::Operand:
      if (v.operand.tensor) tensor(*v.operand.tensor);
      if (v.operand.scalar) out.push_back(v.operand.scalar.get());
      break;
    case ParamKind::Scalar:
    case ParamKind::Pointer:
      if (v.expr) out.push_back(v.expr.get());
      break;
    case ParamKind::List:
      for (const Expr& e : v.list)
        if (e) out.push_back(e.get());
      break;
    default:
      break;
  }
}

TEST(IrInstDefs, EveryRowHasAConstruction) {
  for (const InstDef& d : inst_defs()) {
    EXPECT_NE(d.build, nullptr) << d.name << " has no construction: the parser cannot build it";
    EXPECT_NE(d.args, nullptr) << d.name << " has no arguments function: the printer cannot print it";
    EXPECT_EQ(find_inst_def(d.name), &d);
    for (const std::string& alias : d.aliases) EXPECT_EQ(find_inst_def(alias), &d) << alias;
    for (const Param& p : d.params) {
      // A parameter that names a variable says what the instruction does to it.
      const bool names_var = p.kind == ParamKind::Tensor || p.kind == ParamKind::Operand ||
                             p.kind == ParamKind::Pointer || p.kind == ParamKind::TensorVar;
      EXPECT_EQ(names_var, p.access != Access::None) << d.name << " parameter " << p.name;
      EXPECT_TRUE(!p.keyword_only || !p.required) << d.name << " parameter " << p.name;
    }
    const int out = d.param_index("out");
    if (out >= 0) {
      EXPECT_EQ(d.results, Results::One) << d.name;
      EXPECT_EQ(d.params[static_cast<size_t>(out)].access, Access::Write) << d.name;
    }
  }
  EXPECT_EQ(find_inst_def("NoSuchInstruction"), nullptr);
}

TEST(IrInstDefs, EveryNodeClassAndOpHasARow) {
  for (int k = 0; k <= static_cast<int>(kLastInstKind); ++k) {
    const auto kind = static_cast<InstKind>(k);
    if (kind == InstKind::Elementwise) {
      for (int op = 0; op <= static_cast<int>(kLastElementwiseOp); ++op) {
        EXPECT_EQ(inst_def(kind, op).kind, kind);
        EXPECT_EQ(inst_def(kind, op).op, op);
      }
    } else if (kind == InstKind::Reduce) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min})
        EXPECT_EQ(inst_def(kind, static_cast<int>(op)).op, static_cast<int>(op));
    } else {
      EXPECT_EQ(inst_def(kind).kind, kind);
    }
  }
  EXPECT_STREQ(to_string(ElementwiseOp::Rsqrt), "Rsqrt");
  EXPECT_EQ(arity(ElementwiseOp::Where), 3);
  EXPECT_EQ(arity(ElementwiseOp::Exp2), 1);
  EXPECT_STREQ(to_string(ReduceOp::Max), "ReduceMax");
  EXPECT_THROW(inst_def(InstKind::Dot, 1), InternalError);
}

// Each row with its required parameters, and once more with each optional one: parse, print, parse the
// print again; the node's arguments hold every given parameter; the row's construction rebuilds the node
// from them; for_each_expr visits exactly their expressions.
TEST(IrInstDefs, EveryRowParsesPrintsAndRoundTrips) {
  for (const InstDef& d : inst_defs()) {
    std::set<size_t> covered;
    for (int extra = -1; extra < static_cast<int>(d.params.size()); ++extra) {
      if (extra >= 0 && d.params[static_cast<size_t>(extra)].required) continue;
      const std::string stmt = call(d, extra);
      const std::string text = program_with(stmt);
      Diagnostics diags;
      auto p = parse_program(text, diags);
      if (!p) continue;  // an argument combination the row's construction rejects (AllocateShared(f32))
      SCOPED_TRACE(stmt);
      ASSERT_EQ(p->body.size(), 2u);
      const auto* is = p->body[1]->as<InstStmt>();
      ASSERT_NE(is, nullptr);
      EXPECT_EQ(&is->inst->def(), &d);
      EXPECT_EQ(is->inst->name(), d.name);

      const std::string printed = print_program(*p);
      EXPECT_NE(printed.find(d.name + "("), std::string::npos) << printed;
      auto again = parse(printed);
      ASSERT_TRUE(again.has_value());
      EXPECT_EQ(print_program(*again), printed);

      const InstArgs args = inst_args(*is->inst);
      for (size_t i = 0; i < d.params.size(); ++i) {
        const bool given = d.params[i].required || static_cast<int>(i) == extra;
        EXPECT_EQ(args.at(i).present, given) << d.params[i].name;
        if (given) covered.insert(i);
      }

      Program rebuilt = *p;
      rebuilt.body[1] = std::make_shared<InstStmt>(is->results, d.build(args, is->inst->loc), is->loc);
      EXPECT_EQ(print_program(rebuilt), printed);

      std::vector<const ExprNode*> visited, expected;
      is->inst->for_each_expr([&](const Expr& e) { visited.push_back(e.get()); });
      for (size_t i = 0; i < d.params.size(); ++i) exprs_of(d.params[i].kind, args.at(i), expected);
      EXPECT_EQ(visited, expected);
    }
    EXPECT_EQ(covered.size(), d.params.size()) << d.name << ": a parameter never parsed and printed";
    if (!d.aliases.empty()) {
      auto p = parse(program_with(d.aliases[0] + "()"));
      ASSERT_TRUE(p.has_value());
      EXPECT_EQ(p->body[1]->as<InstStmt>()->inst->name(), d.name);
    }
  }
}

// ViewGlobal's layout may be `auto` (the tile layer chooses it): it parses into the node's flag, prints and
// parses back the same; no other layout parameter takes it, and it is not a name a program may define.
TEST(IrInstDefs, AutoLayoutIsViewGlobalsOnly) {
  auto p = parse(program_with("x = ViewGlobal(p, dtype=f32, shape=[4, 4], layout=auto)"));
  ASSERT_TRUE(p.has_value());
  const auto* v = p->body[1]->as<InstStmt>()->inst->as<ViewGlobalInst>();
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(v->auto_layout);
  EXPECT_FALSE(v->layout.has_value());
  const std::string printed = print_program(*p);
  EXPECT_NE(printed.find("shape=[4, 4], layout=auto)"), std::string::npos) << printed;
  auto again = parse(printed);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(print_program(*again), printed);
  for (const char* bad : {"x = AllocateRegister(f32, layout=auto)",
                          "x = ViewGlobal(p, dtype=f32, shape=[4, 4], strides=[4, 1], layout=auto)"}) {
    Diagnostics diags;
    EXPECT_FALSE(parse_program(program_with(bad), diags).has_value()) << bad;
    EXPECT_TRUE(diags.has_errors()) << bad;
  }
  Diagnostics diags;
  EXPECT_FALSE(parse_program("auto = local(2)\n", diags).has_value());
  EXPECT_NE(diags.render("t", "").find("'auto' is a keyword"), std::string::npos) << diags.render("t", "");
}

std::vector<std::string> names(const std::vector<Var>& vars) {
  std::vector<std::string> out;
  for (const Var& v : vars) out.push_back(v->name);
  return out;
}

TEST(IrInstDefs, ReadsAndWritesAreTheTablesAccesses) {
  struct Case {
    const char* stmt;
    std::vector<std::string> reads, writes;
  };
  const std::vector<Case> cases = {
      {"x = ViewGlobal(p, dtype=f32, shape=[4])", {"p"}, {}},
      {"StoreGlobal(r, g)", {"r"}, {"g"}},
      {"StoreShared(r, s[0:, :])", {"r"}, {"s"}},
      {"AtomicAddGlobal(r, g)", {"r", "g"}, {"g"}},
      {"CopyAsync(s, g)", {"g"}, {"s"}},
      {"FreeShared(s)", {}, {"s"}},
      {"LoadShared(s, L, out=o)", {"s"}, {"o"}},
      {"x = LoadGlobal(g, L)", {"g"}, {}},
      {"Add(r, q, out=o)", {"r", "q"}, {"o"}},
      {"x = Where(r, q, 1.0)", {"r", "q"}, {}},
      {"x = Dot(r, q, o)", {"r", "q", "o"}, {}},
      {"Cast(r, dtype=f32, out=o)", {"r"}, {"o"}},
      {"x = ReduceSum(r, dim=0)", {"r"}, {}},
      {"x = View(r)", {"r"}, {}},
      {"Print(r)", {"r"}, {}},
      {"Print(1)", {}, {}},
      {"Synchronize()", {}, {}},
  };
  for (const Case& c : cases) {
    const std::string text =
        std::string("L = spatial(2, 2).local(1, 2)\n\ndef k<1>[threads=4](f32* p):\n") +
        "    g = ViewGlobal(p, dtype=f32, shape=[4, 4])\n" + "    s = AllocateShared(f32, shape=[4, 4])\n" +
        "    r = AllocateRegister(f32, layout=L)\n    q = AllocateRegister(f32, layout=L)\n" +
        "    o = AllocateRegister(f32, layout=L)\n    " + c.stmt + "\n";
    auto p = parse(text);
    ASSERT_TRUE(p.has_value()) << c.stmt;
    const InstNode& inst = *p->body.back()->as<InstStmt>()->inst;
    EXPECT_EQ(names(inst.reads()), c.reads) << c.stmt;
    EXPECT_EQ(names(inst.writes()), c.writes) << c.stmt;
    // used_vars: every variable operand, read or written, in parameter order.
    std::set<std::string> all(c.reads.begin(), c.reads.end());
    all.insert(c.writes.begin(), c.writes.end());
    const std::vector<std::string> used = names(inst.used_vars());
    EXPECT_EQ(std::set<std::string>(used.begin(), used.end()), all) << c.stmt;
  }
  // CopyAsync's write completes later; AtomicAddGlobal both reads and writes its destination.
  EXPECT_EQ(find_inst_def("CopyAsync")->params[0].access, Access::AsyncWrite);
  EXPECT_EQ(find_inst_def("AtomicAddGlobal")->params[1].access, Access::ReadWrite);
}

TEST(IrInstDefs, EffectsAndResults) {
  auto def = [](const char* name) { return *find_inst_def(name); };
  EXPECT_TRUE(def("Synchronize").effects.barrier);
  EXPECT_TRUE(def("CopyAsyncCommitGroup").effects.commit_group);
  EXPECT_TRUE(def("CopyAsyncWaitGroup").effects.wait_group);
  EXPECT_TRUE(def("StoreGlobal").effects.global_memory);
  EXPECT_TRUE(def("AtomicAddGlobal").effects.global_memory);
  EXPECT_FALSE(def("StoreShared").effects.global_memory);
  EXPECT_TRUE(def("Print").effects.output);
  EXPECT_TRUE(def("Exit").effects.exits);
  for (const char* pure : {"Add", "LoadGlobal", "Cast", "Dot", "View", "AllocateShared", "CopyAsync"})
    EXPECT_FALSE(def(pure).has_effects()) << pure;
  EXPECT_EQ(def("BlockIndices").result_count(3), 3);
  EXPECT_EQ(def("LoadShared").result_count(3), 1);
  EXPECT_EQ(def("StoreShared").result_count(3), 0);
  EXPECT_EQ(def("StoreShared").param_index("out"), -1);
  EXPECT_EQ(def("Dot").param_index("out"), 5);  // after a, b, c, transpose_a, transpose_b
}

}  // namespace
}  // namespace tilevm::ir
