// Random single-operator mutations are rejected by the verifier (and every mutant that builds round-trips
// through the text form). Each mutation changes one operator of a
// graph (its kind, an operand, a constant, a dimension, an imap, fmap or omap) at any level; a mutant that
// still builds and that real-number evaluation shows to compute something else must fail verification.
// Mutants that agree on real numbers (add(a, b) -> add(b, a)) are counted, not checked: they may be
// equivalent.
#include <cmath>
#include <functional>
#include <random>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "superopt_test_util.h"
#include "tilevm/superopt/evaluate.h"
#include "tilevm/superopt/verify.h"
#include "tilevm/support/error.h"

namespace tilevm::superopt {
namespace {

using testing::random_inputs;
using testing::test_graph;

// A change of the op numbered `target` in pre-order (a graph's ops in order, a body right after its op).
struct Mutation {
  int target = 0;
  std::function<void(Op&)> apply;
};

Graph rebuild(const Graph& g, const std::vector<Shape>& operand_shapes, int& counter, const Mutation& m) {
  Graph out = g.level() == Level::Kernel  ? Graph::kernel(g.name())
              : g.level() == Level::Block ? Graph::block(g.grid(), g.loop(), operand_shapes)
                                          : Graph::thread();
  for (const Op& original : g.ops()) {
    Op op = original;
    if (counter++ == m.target) m.apply(op);
    std::vector<std::string> names;
    for (int id : original.outputs) names.push_back(g.tensor(id).name);
    if (op.child >= 0) {
      std::vector<Shape> shapes;
      for (int id : op.inputs) shapes.push_back(out.tensor(id).shape);
      Graph child = rebuild(g.children()[op.child], shapes, counter, m);
      out.add(op.kind, op.inputs, op, {}, names, &child);
    } else {
      out.add(op.kind, op.inputs, op, g.tensor(original.outputs[0]).shape, names);
    }
  }
  if (g.level() != Level::Block)
    for (int id : g.outputs()) out.add_output(id);
  return out;
}

void enumerate(const Graph& g, int& counter, std::vector<Mutation>& out) {
  const std::vector<OpKind> binaries = {OpKind::Add, OpKind::Mul, OpKind::Div, OpKind::Matmul};
  const std::vector<OpKind> unaries = {OpKind::Exp,  OpKind::Sqrt, OpKind::Square,
                                       OpKind::Silu, OpKind::Gelu, OpKind::Relu};
  for (const Op& op : g.ops()) {
    int index = counter++;
    auto add = [&](std::function<void(Op&)> fn) { out.push_back({index, std::move(fn)}); };
    for (size_t j = 0; j < op.inputs.size(); ++j)
      for (int t = 0; t < op.outputs[0]; ++t)
        if (t != op.inputs[j]) add([j, t](Op& o) { o.inputs[j] = t; });
    if (is_elementwise_binary(op.kind) || op.kind == OpKind::Matmul) {
      for (OpKind k : binaries)
        if (k != op.kind) add([k](Op& o) { o.kind = k; });
      add([](Op& o) { std::swap(o.inputs[0], o.inputs[1]); });
    }
    if (is_unary(op.kind))
      for (OpKind k : unaries)
        if (k != op.kind) add([k](Op& o) { o.kind = k; });
    if (op.kind == OpKind::Const || op.kind == OpKind::RmsNorm) {
      add([](Op& o) { o.value = make_constant(o.value.num + o.value.den, o.value.den); });
      add([](Op& o) { o.value = make_constant(o.value.num * 3, o.value.den * 2); });
    }
    int rank = static_cast<int>(g.tensor(op.outputs[0]).shape.size());
    if (op.kind == OpKind::Sum || op.kind == OpKind::Concat)
      for (int d = 0; d < rank; ++d)
        if (d != op.dim) add([d](Op& o) { o.dim = d; });
    if (op.kind == OpKind::Iter || op.kind == OpKind::Accum)
      for (int d = kReplica; d < rank; ++d)
        if (d != op.fmap) add([d](Op& o) { o.fmap = d; });
    if (op.kind == OpKind::Iter || op.kind == OpKind::Save)
      for (int axis = 0; axis < 3; ++axis)
        for (int d = kReplica; d < rank; ++d)
          if (d != op.map[axis]) add([axis, d](Op& o) { o.map[axis] = d; });
    if (op.kind == OpKind::Save) add([](Op& o) { std::swap(o.map[0], o.map[1]); });
    if (op.kind == OpKind::Iter)
      for (int k = 0; k < static_cast<int>(g.operand_shapes().size()); ++k)
        if (k != op.operand) add([k](Op& o) { o.operand = k; });
    if (op.child >= 0) enumerate(g.children()[op.child], counter, out);
  }
}

std::vector<Mutation> mutations(const Graph& g) {
  std::vector<Mutation> out;
  int counter = 0;
  enumerate(g, counter, out);
  return out;
}

// Whether real-number evaluation tells the graphs apart: some finite elements differ clearly.
bool differ_on_reals(const Graph& a, const Graph& b) {
  for (uint64_t seed : {1, 2}) {
    auto inputs = random_inputs(a, seed);
    auto ra = evaluate_real(a, inputs), rb = evaluate_real(b, inputs);
    for (size_t o = 0; o < ra.size(); ++o)
      for (size_t i = 0; i < ra[o].size(); ++i) {
        double x = ra[o][i], y = rb[o][i];
        if (std::isfinite(x) && std::isfinite(y) && std::abs(x - y) > 1e-6 * (1 + std::abs(x) + std::abs(y)))
          return true;
      }
  }
  return false;
}

struct Counts {
  int rejected = 0;  // different on reals and rejected by the verifier
  int invalid = 0;   // did not build, or changed an output's shape
  int agreeing = 0;  // agreed on reals: not checked
};

// Checks one mutant; a different one that passes verification is a test failure.
void check_mutant(const Graph& base, const Mutation& m, uint64_t seed, Counts& counts) {
  Graph mutant = Graph::kernel("");
  try {
    int counter = 0;
    mutant = rebuild(base, {}, counter, m);
    check_lax(mutant);
    for (size_t o = 0; o < base.outputs().size(); ++o)
      if (mutant.tensor(mutant.outputs()[o]).shape != base.tensor(base.outputs()[o]).shape) {
        ++counts.invalid;
        return;
      }
  } catch (const Error&) {
    ++counts.invalid;
    return;
  }
  // Every graph that builds prints to text that parses back to the same graph.
  std::string printed = print_graph(mutant);
  ASSERT_EQ(print_graph(parse_graph(printed)), printed);
  if (!differ_on_reals(base, mutant)) {
    ++counts.agreeing;
    return;
  }
  VerifyResult r = verify_equivalent(base, mutant, {.trials = 2, .seed = seed});
  ASSERT_EQ(r.verdict, Verdict::NotEquivalent) << "mutant passed: " << r.summary() << "\n"
                                               << print_graph(mutant);
  ++counts.rejected;
}

TEST(SuperoptMutation, EveryMutationOfTheWorkloadsIsRejected) {
  Counts counts;
  for (const char* name : {"rmsnorm_linear.graph", "rmsnorm_linear_fused.graph", "attention.graph",
                           "attention_fused.graph", "gated_mlp.graph"}) {
    SCOPED_TRACE(name);
    Graph base = test_graph(name);
    uint64_t seed = 0;
    for (const Mutation& m : mutations(base)) check_mutant(base, m, ++seed, counts);
  }
  std::printf("workload mutations: %d rejected, %d agreeing on reals, %d invalid\n", counts.rejected,
              counts.agreeing, counts.invalid);
  EXPECT_GE(counts.rejected, 100);
}

// A random Lax graph over [3, 3] tensors: every tensor without a consumer is an output, so no op is dead.
Graph random_graph(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Graph g = Graph::kernel("random");
  std::vector<int> pool;
  std::vector<bool> after_exp;
  int inputs = 2 + static_cast<int>(rng() % 2);
  for (int i = 0; i < inputs; ++i) {
    pool.push_back(g.input(fmt::format("X{}", i), {3, 3}));
    after_exp.push_back(false);
  }
  int ops = 4 + static_cast<int>(rng() % 5);
  const std::vector<OpKind> kinds = {OpKind::Add,  OpKind::Mul,    OpKind::Div, OpKind::Matmul, OpKind::Exp,
                                     OpKind::Silu, OpKind::Square, OpKind::Sum, OpKind::Const};
  while (static_cast<int>(g.tensors().size()) < inputs + ops) {
    OpKind kind = kinds[rng() % kinds.size()];
    int a = pool[rng() % pool.size()], b = pool[rng() % pool.size()];
    try {
      int t = -1;
      bool exp_a = after_exp[a], exp_ab = after_exp[a] || after_exp[b];
      if (kind == OpKind::Const) {
        int c = g.constant(
            make_constant(2 + static_cast<int64_t>(rng() % 5), 1 + static_cast<int64_t>(rng() % 3)), {1, 1});
        after_exp.push_back(false);
        pool.push_back(c);
        t = g.binary(OpKind::Mul, a, c);
        after_exp.push_back(exp_a);
      } else if (kind == OpKind::Exp) {
        if (exp_a) continue;
        t = g.unary(kind, a);
        after_exp.push_back(true);
      } else if (is_unary(kind)) {
        t = g.unary(kind, a);
        after_exp.push_back(kind == OpKind::Silu ? false : exp_a);
      } else if (kind == OpKind::Sum) {
        t = g.sum(a, static_cast<int>(rng() % 2));
        after_exp.push_back(exp_a);
      } else {
        t = g.binary(kind, a, b);
        after_exp.push_back(exp_ab);
      }
      pool.push_back(t);
    } catch (const Error&) {
      continue;
    }
  }
  std::vector<bool> used(g.tensors().size(), false);
  for (const Op& op : g.ops())
    for (int id : op.inputs) used[id] = true;
  for (size_t id = 0; id < used.size(); ++id)
    if (!used[id] && g.ops()[g.tensor(static_cast<int>(id)).producer].kind != OpKind::Input)
      g.add_output(static_cast<int>(id));
  return g;
}

RC_GTEST_PROP(SuperoptMutation, RandomMutationsOfRandomGraphsAreRejected, ()) {
  Graph base = random_graph(*rc::gen::arbitrary<uint64_t>());
  RC_PRE(!base.outputs().empty());
  std::vector<Mutation> all = mutations(base);
  Counts counts;
  for (int i = 0; i < 10; ++i) {
    size_t pick = *rc::gen::inRange<size_t>(0, all.size());
    check_mutant(base, all[pick], *rc::gen::arbitrary<uint64_t>(), counts);
    RC_ASSERT(!::testing::Test::HasFatalFailure());
  }
}

TEST(SuperoptMutation, ThousandsOfRandomGraphMutationsAreRejected) {
  Counts counts;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    Graph base = random_graph(seed);
    if (base.outputs().empty()) continue;
    uint64_t verifier_seed = seed * 1000;
    for (const Mutation& m : mutations(base)) {
      check_mutant(base, m, ++verifier_seed, counts);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  std::printf("random-graph mutations: %d rejected, %d agreeing on reals, %d invalid\n", counts.rejected,
              counts.agreeing, counts.invalid);
  EXPECT_GE(counts.rejected, 1000);
}

}  // namespace
}  // namespace tilevm::superopt
