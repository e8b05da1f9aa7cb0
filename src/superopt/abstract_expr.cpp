// Abstract expressions in normal form, of kernel and block graphs, and the subexpression check.
#include "tilevm/superopt/abstract_expr.h"

#include <algorithm>
#include <deque>

#include "tilevm/support/error.h"

namespace tilevm::superopt {

size_t ExprNodeHash::operator()(const ExprNode& n) const {
  // The search interns millions of candidate terms: hash the fields, no text.
  size_t h = std::hash<std::string>()(n.name) ^ (static_cast<size_t>(n.kind) * 0x9e3779b97f4a7c15ULL);
  h = h * 31 + static_cast<size_t>(n.extent);
  for (int c : n.children) h = h * 1000003 + static_cast<size_t>(c);
  return h;
}

int ExprPool::intern(ExprNode node) {
  auto it = index_.find(node);
  if (it != index_.end()) return it->second;
  int id = static_cast<int>(nodes_.size());
  nodes_.push_back(node);
  index_.emplace(std::move(node), id);
  return id;
}

int ExprPool::var(const std::string& name) {
  return intern({ExprKind::Var, name, 0, {}});
}

int ExprPool::constant(const std::string& text) {
  return intern({ExprKind::Const, text, 0, {}});
}

std::vector<int> ExprPool::flatten(ExprKind kind, const std::vector<int>& items) const {
  std::vector<int> flat;
  for (int t : items) {
    const ExprNode& n = nodes_[t];
    if (n.kind == kind)
      flat.insert(flat.end(), n.children.begin(), n.children.end());
    else
      flat.push_back(t);
  }
  return flat;
}

int ExprPool::add(std::vector<int> terms) {
  std::vector<int> flat = flatten(ExprKind::Add, terms);
  if (flat.size() == 1) return flat[0];
  std::sort(flat.begin(), flat.end());
  return intern({ExprKind::Add, "", 0, std::move(flat)});
}

int ExprPool::mul(std::vector<int> factors) {
  std::vector<int> flat = flatten(ExprKind::Mul, factors);
  // Sums and quotients move outward: sum(k, a) * b = sum(k, a * b), (a / b) * c = (a * c) / b.
  for (size_t i = 0; i < flat.size(); ++i) {
    const ExprNode n = nodes_[flat[i]];
    if (n.kind == ExprKind::Sum || n.kind == ExprKind::Div) {
      std::vector<int> rest = flat;
      rest[i] = n.children[0];
      int product = mul(std::move(rest));
      return n.kind == ExprKind::Sum ? sum(n.extent, product) : div(product, n.children[1]);
    }
  }
  if (flat.size() == 1) return flat[0];
  std::sort(flat.begin(), flat.end());
  return intern({ExprKind::Mul, "", 0, std::move(flat)});
}

int ExprPool::div(int num, int den) {
  const ExprNode n = nodes_[num];
  const ExprNode d = nodes_[den];
  if (n.kind == ExprKind::Div) return div(n.children[0], mul({n.children[1], den}));
  if (d.kind == ExprKind::Div) return div(mul({num, d.children[1]}), d.children[0]);
  if (n.kind == ExprKind::Sum) return sum(n.extent, div(n.children[0], den));
  return intern({ExprKind::Div, "", 0, {num, den}});
}

int ExprPool::exp(int x) {
  return intern({ExprKind::Exp, "", 0, {x}});
}

int ExprPool::fn(OpKind kind, int x) {
  return intern({ExprKind::Fn, std::string(op_name(kind)), 0, {x}});
}

int ExprPool::sum(int64_t extent, int x) {
  if (extent == 1) return x;
  const ExprNode n = nodes_[x];
  if (n.kind == ExprKind::Sum) return sum(extent * n.extent, n.children[0]);
  return intern({ExprKind::Sum, "", extent, {x}});
}

int ExprPool::concat(int a, int b) {
  return intern({ExprKind::Concat, "", 0, {a, b}});
}

std::string ExprPool::text(int id) const {
  const ExprNode& n = nodes_.at(id);
  std::vector<std::string> parts;
  for (int c : n.children) parts.push_back(text(c));
  switch (n.kind) {
    case ExprKind::Var:
    case ExprKind::Const:
      return n.name;
    case ExprKind::Add:
      return fmt::format("add({})", fmt::join(parts, ", "));
    case ExprKind::Mul:
      return fmt::format("mul({})", fmt::join(parts, ", "));
    case ExprKind::Div:
      return fmt::format("div({})", fmt::join(parts, ", "));
    case ExprKind::Exp:
      return fmt::format("exp({})", parts[0]);
    case ExprKind::Fn:
      return fmt::format("{}({})", n.name, parts[0]);
    case ExprKind::Sum:
      return fmt::format("sum({}, {})", n.extent, parts[0]);
    case ExprKind::Concat:
      return fmt::format("concat({})", fmt::join(parts, ", "));
  }
  return "?";
}

namespace {

// The expressions of a graph's tensors; `operands` are the expressions of a block or thread op's operands.
std::vector<int> exprs_of(ExprPool& pool, const Graph& g, const std::vector<int>& operands) {
  std::vector<int> e(g.tensors().size(), -1);
  size_t next_input = 0;
  for (const Op& op : g.ops()) {
    if (op.kind == OpKind::Input) {
      e[op.outputs[0]] =
          g.level() == Level::Kernel ? pool.var(g.tensor(op.outputs[0]).name) : operands.at(next_input);
      ++next_input;
    } else if (op.kind == OpKind::Block || op.kind == OpKind::Thread) {
      std::vector<int> operand_exprs;
      for (int id : op.inputs) operand_exprs.push_back(e[id]);
      const Graph& child = g.children()[op.child];
      std::vector<int> inner = exprs_of(pool, child, operand_exprs);
      for (size_t i = 0; i < op.outputs.size(); ++i) e[op.outputs[i]] = inner[child.outputs()[i]];
    } else {
      e[op.outputs[0]] = op_abstract_expr(pool, g, op, e, operands);
    }
  }
  return e;
}

}  // namespace

int op_abstract_expr(ExprPool& pool, const Graph& g, const Op& op, const std::vector<int>& exprs,
                     const std::vector<int>& operands) {
  auto in = [&](int i) { return exprs.at(op.inputs[i]); };
  switch (op.kind) {
    case OpKind::Const:
      return pool.constant(op.value.text);
    case OpKind::Matmul:
      return pool.sum(g.tensor(op.inputs[0]).shape.back(), pool.mul({in(0), in(1)}));
    case OpKind::Add:
      return pool.add({in(0), in(1)});
    case OpKind::Mul:
      return pool.mul({in(0), in(1)});
    case OpKind::Div:
      return pool.div(in(0), in(1));
    case OpKind::Square:
      return pool.mul({in(0), in(0)});
    case OpKind::Exp:
      return pool.exp(in(0));
    case OpKind::Sqrt:
    case OpKind::Silu:
    case OpKind::Gelu:
    case OpKind::Relu:
      return pool.fn(op.kind, in(0));
    case OpKind::Sum:
      return pool.sum(g.tensor(op.inputs[0]).shape[op.dim], in(0));
    case OpKind::Concat:
      return pool.concat(in(0), in(1));
    case OpKind::RmsNorm: {
      int64_t n = g.tensor(op.outputs[0]).shape.back();
      int mean = pool.mul({pool.sum(n, pool.mul({in(0), in(0)})), pool.constant(make_constant(1, n).text)});
      return pool.div(in(0), pool.fn(OpKind::Sqrt, pool.add({mean, pool.constant(op.value.text)})));
    }
    case OpKind::Iter:
      return operands.at(op.operand);
    case OpKind::Accum:
      return op.fmap == kReplica ? pool.sum(g.loop(), in(0)) : in(0);
    case OpKind::Save:
      return in(0);
    default:
      break;
  }
  internal_failure("op with one expression", __FILE__, __LINE__, fmt::format("{}", op_name(op.kind)));
}

int64_t op_expr_extent(const Graph& g, OpKind kind, int x, int y, int attr) {
  switch (kind) {
    case OpKind::Matmul:
      return g.tensor(x).shape.back();
    case OpKind::Sum:
      return g.tensor(y).shape[static_cast<size_t>(attr)];
    case OpKind::RmsNorm:
      return g.tensor(y).shape.back();
    case OpKind::Accum:
      return attr == kReplica ? -1 : -2;
    default:
      return 0;
  }
}

std::vector<int> abstract_exprs(ExprPool& pool, const Graph& kernel) {
  return exprs_of(pool, kernel, {});
}

std::vector<int> abstract_exprs(ExprPool& pool, const Graph& block, const std::vector<int>& operands) {
  return exprs_of(pool, block, operands);
}

namespace {

// One rewrite of distributivity anywhere in e, in either direction; each result is a new form.
void distribute(ExprPool& pool, int e, std::vector<int>& out) {
  const ExprNode n = pool.node(e);
  // Expand: a * (b + c) = a * b + a * c; (b + c) / a = b / a + c / a; sum(k, b + c) = sum(k, b) + sum(k, c).
  for (size_t i = 0; i < n.children.size(); ++i) {
    const ExprNode c = pool.node(n.children[i]);
    if (c.kind != ExprKind::Add) continue;
    bool expandable =
        n.kind == ExprKind::Mul || (n.kind == ExprKind::Div && i == 0) || n.kind == ExprKind::Sum;
    if (!expandable) continue;
    std::vector<int> terms;
    for (int t : c.children) {
      std::vector<int> replaced = n.children;
      replaced[i] = t;
      if (n.kind == ExprKind::Mul) terms.push_back(pool.mul(replaced));
      if (n.kind == ExprKind::Div) terms.push_back(pool.div(replaced[0], replaced[1]));
      if (n.kind == ExprKind::Sum) terms.push_back(pool.sum(n.extent, replaced[0]));
    }
    out.push_back(pool.add(terms));
  }
  // Factor: a * b + a * c = a * (b + c), for a factor shared by two products (or sums of one extent).
  if (n.kind == ExprKind::Add) {
    for (size_t i = 0; i < n.children.size(); ++i)
      for (size_t j = i + 1; j < n.children.size(); ++j) {
        const ExprNode a = pool.node(n.children[i]);
        const ExprNode b = pool.node(n.children[j]);
        std::vector<int> rest;
        for (size_t k = 0; k < n.children.size(); ++k)
          if (k != i && k != j) rest.push_back(n.children[k]);
        if (a.kind == ExprKind::Sum && b.kind == ExprKind::Sum && a.extent == b.extent) {
          rest.push_back(pool.sum(a.extent, pool.add({a.children[0], b.children[0]})));
          out.push_back(pool.add(rest));
          continue;
        }
        if (a.kind != ExprKind::Mul || b.kind != ExprKind::Mul) continue;
        for (int f : a.children) {
          auto it = std::find(b.children.begin(), b.children.end(), f);
          if (it == b.children.end()) continue;
          std::vector<int> ra = a.children, rb = b.children;
          ra.erase(std::find(ra.begin(), ra.end(), f));
          rb.erase(std::find(rb.begin(), rb.end(), f));
          int sa = ra.empty() ? pool.constant("1") : pool.mul(ra);
          int sb = rb.empty() ? pool.constant("1") : pool.mul(rb);
          std::vector<int> factored = rest;
          factored.push_back(pool.mul({f, pool.add({sa, sb})}));
          out.push_back(pool.add(factored));
          break;
        }
      }
  }
  // The same inside each operand.
  for (size_t i = 0; i < n.children.size(); ++i) {
    std::vector<int> inner;
    distribute(pool, n.children[i], inner);
    for (int r : inner) {
      std::vector<int> children = n.children;
      children[i] = r;
      switch (n.kind) {
        case ExprKind::Add:
          out.push_back(pool.add(children));
          break;
        case ExprKind::Mul:
          out.push_back(pool.mul(children));
          break;
        case ExprKind::Div:
          out.push_back(pool.div(children[0], children[1]));
          break;
        case ExprKind::Exp:
          out.push_back(pool.exp(children[0]));
          break;
        case ExprKind::Fn:
          out.push_back(pool.fn(*op_from_name(n.name), children[0]));
          break;
        case ExprKind::Sum:
          out.push_back(pool.sum(n.extent, children[0]));
          break;
        case ExprKind::Concat:
          out.push_back(pool.concat(children[0], children[1]));
          break;
        default:
          break;
      }
    }
  }
}

bool sub_multiset(const std::vector<int>& small, const std::vector<int>& big) {
  return std::includes(big.begin(), big.end(), small.begin(), small.end());
}

// x is y, one operand of y's add or mul, or a sub-multiset of them.
bool part_of(const ExprPool& pool, int x, int y) {
  // Through quotients: sum(k, a) / d is sum(k, a / d) in normal form, and sum(k, a) is part of it.
  while (pool.node(y).kind == ExprKind::Div && x != y) y = pool.node(y).children[0];
  if (x == y) return true;
  const ExprNode& a = pool.node(x);
  const ExprNode& b = pool.node(y);
  if (b.kind != ExprKind::Add && b.kind != ExprKind::Mul) return false;
  if (a.kind == b.kind) return sub_multiset(a.children, b.children);
  return std::find(b.children.begin(), b.children.end(), x) != b.children.end();
}

}  // namespace

SubexpressionOracle::SubexpressionOracle(ExprPool& pool, int target, int max_forms) : pool_(pool) {
  std::deque<int> queue = {target};
  forms_.insert(target);
  while (!queue.empty() && static_cast<int>(forms_.size()) < max_forms) {
    int e = queue.front();
    queue.pop_front();
    std::vector<int> next;
    distribute(pool_, e, next);
    for (int f : next)
      if (static_cast<int>(forms_.size()) < max_forms && forms_.insert(f).second) queue.push_back(f);
  }
  for (int f : forms_) collect(f);
}

void SubexpressionOracle::collect(int e) {
  if (!subterms_.insert(e).second) return;
  for (int c : pool_.node(e).children) collect(c);
}

bool SubexpressionOracle::admits(int e) const {
  if (subterms_.count(e)) return true;
  // The search asks about the same expressions again and again; the scan below is linear in the subterms.
  auto cached = cache_.find(e);
  if (cached != cache_.end()) return cached->second;
  bool result = scan(e);
  cache_.emplace(e, result);
  return result;
}

bool SubexpressionOracle::scan(int e) const {
  const ExprNode& n = pool_.node(e);
  for (int s : subterms_) {
    const ExprNode& t = pool_.node(s);
    if ((n.kind == ExprKind::Add || n.kind == ExprKind::Mul) && t.kind == n.kind &&
        sub_multiset(n.children, t.children))
      return true;
    // sum(K, x * y) = sum(K / k, sum(k, x) * y): a partial sum over a divisor of the extent, of a part of
    // the summand.
    if (n.kind == ExprKind::Sum && t.kind == ExprKind::Sum && t.extent % n.extent == 0 &&
        part_of(pool_, n.children[0], t.children[0]))
      return true;
  }
  return false;
}

}  // namespace tilevm::superopt
