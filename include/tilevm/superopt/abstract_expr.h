// Abstract expressions (Mirage, paper section 4.3): what a tensor of a graph computes, with the differences
// between elements of one input tensor ignored. Matmul(A, B) with reduction extent k is sum(k, A * B), a
// Sum over extent k is sum(k, x), an accumulator that sums over L iterations is sum(L, x), an iterator is
// its operand's expression; add, mul, div and exp are themselves, and square is x * x.
//
// Terms are interned in an ExprPool, so equal terms have equal ids, and built in a normal form that
// applies the paper's equivalence axioms that have a direction: add and mul flattened and sorted
// (associativity, commutativity), sum(k, sum(j, x)) = sum(k * j, x), sum(1, x) = x, sums pulled out of
// products and quotients (sum(k, a) * b = sum(k, a * b)), quotients pulled out of products
// ((a / b) * c = (a * c) / b, (a / b) / c = a / (b * c)). Distributivity, which has no good direction, is
// handled by the subexpression check (SubexpressionOracle), which closes the target under it.
//
//   X [8, 16] @ W [16, 4]     sum(16, mul(X, W))
//   the same in a block graph with loop 4: matmul of the [*, 4] parts is sum(4, mul(X, W)), and the
//   accumulator over the loop makes it sum(4, sum(4, ...)) = sum(16, mul(X, W)): the same term
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tilevm/superopt/graph.h"

namespace tilevm::superopt {

enum class ExprKind { Var, Const, Add, Mul, Div, Exp, Fn, Sum, Concat };

struct ExprNode {
  ExprKind kind = ExprKind::Var;
  std::string name;           // Var: the input's name; Const: its text; Fn: the function (sqrt, silu, ...)
  int64_t extent = 0;         // Sum
  std::vector<int> children;  // Add, Mul: sorted; Div: {num, den}
  bool operator==(const ExprNode&) const = default;
};

struct ExprNodeHash {
  size_t operator()(const ExprNode& n) const;
};

class ExprPool {
 public:
  int var(const std::string& name);
  int constant(const std::string& text);
  int add(std::vector<int> terms);
  int mul(std::vector<int> factors);
  int div(int num, int den);
  int exp(int x);
  int fn(OpKind kind, int x);
  int sum(int64_t extent, int x);
  int concat(int a, int b);

  const ExprNode& node(int id) const { return nodes_.at(id); }
  std::string text(int id) const;  // "sum(16, mul(W, X))"

 private:
  int intern(ExprNode node);
  // The operands of `items`, with nested nodes of `kind` replaced by their operands (associativity).
  std::vector<int> flatten(ExprKind kind, const std::vector<int>& items) const;

  std::vector<ExprNode> nodes_;
  std::unordered_map<ExprNode, int, ExprNodeHash> index_;
};

// The abstract expression of every tensor of a kernel graph (block and thread graphs inlined), by tensor id;
// `outputs` gets the kernel graph's outputs' expressions.
std::vector<int> abstract_exprs(ExprPool& pool, const Graph& kernel);

// The abstract expressions of a block graph's tensors, its Iter ops taking `operands`' expressions.
std::vector<int> abstract_exprs(ExprPool& pool, const Graph& block, const std::vector<int>& operands);

// The expression of one op's (single) result from the expressions of the graph's tensors so far; not for
// Input, Block and Thread ops (abstract_exprs handles those).
int op_abstract_expr(ExprPool& pool, const Graph& g, const Op& op, const std::vector<int>& exprs,
                     const std::vector<int>& operands);
// What op_abstract_expr reads of the graph besides its operands' expressions, for an op of `kind` on
// tensors x (-1 when unary) and y with attribute `attr` (a sum's dim, an accumulator's fmap): the one extent
// it uses (a matmul's K, a sum's dimension, rms_norm's row) or, for an accumulator, whether it sums the loop.
// A memo keyed by (kind, this, operand expressions) is exact (the search's).
int64_t op_expr_extent(const Graph& g, OpKind kind, int x, int y, int attr);

// Whether an expression can be part of a graph equivalent to the target (the paper's subexpression check,
// by rewriting instead of an SMT solver): the target is closed under distributivity in both directions
// (mul over add, div over add, sum over add; at most `max_forms` forms), and e is admitted when it is a
// subterm of one of them, up to an add or mul node's sub-multiset of operands and a sum over an extent that
// divides the target's. Sound for pruning in the sense of the paper's Theorem 1 only as far as these rules
// reach: a prefix needing more axioms (cancellation, which Mirage leaves out too) is pruned.
class SubexpressionOracle {
 public:
  SubexpressionOracle(ExprPool& pool, int target, int max_forms = 64);
  bool admits(int e) const;
  bool equivalent(int e) const { return forms_.count(e) > 0; }
  size_t forms() const { return forms_.size(); }

 private:
  void collect(int e);
  bool scan(int e) const;

  ExprPool& pool_;
  std::unordered_set<int> forms_;                // the target's equivalent forms
  std::unordered_set<int> subterms_;             // every subterm of every form
  mutable std::unordered_map<int, bool> cache_;  // admits() of expressions that are not subterms
};

}  // namespace tilevm::superopt
