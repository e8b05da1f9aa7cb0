// Enumeration of block graphs in canonical form with abstract-expression pruning (tilevm/superopt/search.h).
#include "tilevm/superopt/search.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <unordered_map>

#include "tilevm/superopt/abstract_expr.h"
#include "tilevm/superopt/lower_tile.h"
#include "tilevm/superopt/verify.h"
#include "tilevm/support/error.h"

namespace tilevm::superopt {

namespace {

using Rank = std::array<int64_t, 4>;

class BlockSearch {
 public:
  BlockSearch(const Graph& program, const BlockSchedule& schedule, const SearchLimits& limits)
      : program_(program), schedule_(schedule), limits_(limits) {
    if (program.outputs().size() != 1)
      fail("the search needs a program of one output, got {}", program.outputs().size());
    std::vector<int> exprs = abstract_exprs(pool_, program);
    target_ = exprs[program.outputs()[0]];
    target_shape_ = program.tensor(program.outputs()[0]).shape;
    for (int id : program.inputs()) input_exprs_.push_back(exprs[id]);
    oracle_.emplace(pool_, target_);
  }

  SearchResult run() {
    std::vector<int> inputs = program_.inputs();
    if (schedule_.imaps.size() != inputs.size() || schedule_.fmaps.size() != inputs.size())
      fail("the schedule has {} imaps and {} fmaps for {} program inputs", schedule_.imaps.size(),
           schedule_.fmaps.size(), inputs.size());
    std::vector<Shape> shapes;
    for (int id : inputs) shapes.push_back(program_.tensor(id).shape);
    Graph block = Graph::block(schedule_.grid, schedule_.loop, shapes);
    for (size_t i = 0; i < inputs.size(); ++i)
      block.iter(static_cast<int>(i), schedule_.imaps[i], schedule_.fmaps[i],
                 program_.tensor(inputs[i]).name + "_");
    // The program's constants, as [1, ..., 1] tensors the block ops may use (rms_norm brings 1/n and eps).
    std::vector<Constant> constants;
    for (const Op& op : program_.ops()) {
      if (op.kind == OpKind::Const) constants.push_back(op.value);
      if (op.kind == OpKind::RmsNorm) {
        constants.push_back(make_constant(1, program_.tensor(op.inputs[0]).shape.back()));
        constants.push_back(op.value);
      }
    }
    std::vector<std::string> made;
    for (const Constant& c : constants) {
      if (std::find(made.begin(), made.end(), c.text) != made.end()) continue;
      made.push_back(c.text);
      block.constant(c, Shape(target_shape_.size(), 1));
    }
    fixed_ = static_cast<int>(block.tensors().size());
    exprs_ = abstract_exprs(pool_, block, input_exprs_);
    uses_.assign(block.tensors().size(), 0);
    for (const TensorDecl& t : block.tensors())
      shared_bytes_ += element_count(t.shape) * limits_.element_bytes;
    // The iterators whose tile changes every iteration are pipelined as the lowering will (its depth may
    // exceed the requested one for small tiles): stages - 1 more copies of each.
    const int stages = pipeline_stages(block, limits_.stages);
    if (stages > 1) shared_bytes_ += pipelined_elements(block) * limits_.element_bytes * (stages - 1);
    extend(block, {-1, -1, -1, -1}, 0, 0);
    return std::move(result_);
  }

 private:
  // `block` is changed in place and restored: each extension is added, explored and popped.
  void extend(Graph& block, const Rank& last, int ops, int accums) {
    SearchStats& stats = result_.stats;
    if (stats.stopped || stats.states >= limits_.max_states) {
      stats.stopped = true;
      return;
    }
    if (limits_.max_found > 0 && static_cast<int64_t>(result_.found.size()) >= limits_.max_found) return;
    ++stats.states;
    if (stats.states % 1024 == 0 && over_budget()) {
      stats.stopped = true;
      return;
    }
    if (limits_.on_progress && limits_.progress_every > 0 && stats.states % limits_.progress_every == 0)
      limits_.on_progress(stats);
    if (limits_.on_state) limits_.on_state(block);
    // Only the newest tensor can be saved: with any other, the newest op would be dead.
    if (static_cast<int>(block.tensors().size()) > fixed_)
      try_save(block, static_cast<int>(block.tensors().size()) - 1);
    if (ops == limits_.max_ops) return;
    int n = static_cast<int>(block.tensors().size());
    std::vector<OpKind> kinds = limits_.ops;
    if (accums < limits_.max_accums) kinds.push_back(OpKind::Accum);
    // Canonical order: an extension ranks after the last one, so (b, a) starts at the last one's (the ranks
    // of every earlier pair are smaller whatever their kind; the check below settles the rest).
    const int b_first = limits_.canonical ? std::max<int64_t>(0, last[0]) : 0;
    for (int b = b_first; b < n; ++b)
      for (int a = limits_.canonical && b == last[0] ? static_cast<int>(last[1]) : -1; a <= b;
           ++a)  // -1: unary
        for (OpKind kind : kinds) {
          bool binary = kind == OpKind::Matmul || is_elementwise_binary(kind);
          if (binary != (a >= 0)) continue;
          bool commutative = kind == OpKind::Add || kind == OpKind::Mul;
          // Ordered pairs: (a, b) and, unless the op commutes, (b, a).
          for (int swap = 0; swap < (binary && !commutative && a != b ? 2 : 1); ++swap) {
            int x = swap ? b : a, y = swap ? a : b;
            for (int attr : attributes(kind, block.tensor(b).shape)) {
              Rank rank = {b, a, static_cast<int64_t>(kind), attr * 2 + swap};
              if (limits_.canonical && rank <= last) continue;
              try_op(block, kind, x, y, attr, rank, ops, accums);
            }
          }
        }
  }

  // Sum: each dimension of extent > 1 (a sum over one element is the identity, never needed); Accum: fmap
  // "-" then each dimension; others: none. A fixed array: the search asks hundreds of millions of times.
  struct Attributes {
    std::array<int, 17> values{};
    int count = 0;
    void push_back(int v) { values[static_cast<size_t>(count++)] = v; }
    const int* begin() const { return values.data(); }
    const int* end() const { return values.data() + count; }
  };
  static Attributes attributes(OpKind kind, const Shape& shape) {
    Attributes attrs;
    TILEVM_ASSERT(shape.size() < attrs.values.size(), "a block tensor of rank {}", shape.size());
    if (kind == OpKind::Accum) attrs.push_back(kReplica);
    if (kind == OpKind::Sum || kind == OpKind::Accum)
      for (int d = 0; d < static_cast<int>(shape.size()); ++d)
        if (kind == OpKind::Accum || shape[static_cast<size_t>(d)] > 1) attrs.push_back(d);
    if (attrs.count == 0 && kind != OpKind::Sum) attrs.push_back(0);
    return attrs;
  }

  // The builder's checks that fail most often, without the cost of formatting and throwing its error.
  bool fits(const Graph& block, OpKind kind, int x, int y) const {
    Phase py = block.tensor(y).phase;
    if (kind == OpKind::Accum) return py != Phase::Post;
    if (x < 0) return true;
    Phase px = block.tensor(x).phase;
    if ((px == Phase::Loop && py == Phase::Post) || (px == Phase::Post && py == Phase::Loop)) return false;
    const Shape& a = block.tensor(x).shape;
    const Shape& b = block.tensor(y).shape;
    if (a.size() != b.size()) return false;
    size_t r = a.size();
    // A matmul of one row or one column over K > 1 is a dot product, which the lowering cannot give to Gemm
    // (lower_tile.cpp takes K = 1 as a product of broadcasts); the search found such graphs at full sizes
    // (a grid of one output element per block) and they could not be lowered. With lowerable_matmuls, the
    // rows and columns must also fill mma fragments: at [16, 64] x [64, 64] x 2 (the gated MLP's gate at a
    // small size) the search's first 14 equivalent graphs split the 16 rows in four, and none lowered.
    if (kind == OpKind::Matmul) {
      if (r < 2) return false;
      const int64_t m = a[r - 2], n = b[r - 1], k = a[r - 1];
      return k == b[r - 2] && std::equal(a.begin(), a.end() - 2, b.begin()) &&
             (k == 1 ||
              (limits_.lowerable_matmuls ? m % 16 == 0 && n % 8 == 0 && k % 16 == 0 : m > 1 && n > 1));
    }
    for (size_t d = 0; d < r; ++d)
      if (a[d] != b[d] && a[d] != 1 && b[d] != 1) return false;
    return true;
  }

  // What an op's abstract expression depends on (op_expr_extent): its kind, the one extent it reads and its
  // operands' expressions. The search tries the same combinations in millions of states; the memo below
  // skips building their terms again.
  struct ExprKey {
    int64_t extent;
    int kind, a, b;
    bool operator==(const ExprKey&) const = default;
  };
  struct ExprKeyHash {
    size_t operator()(const ExprKey& k) const {
      const size_t h = static_cast<size_t>(k.extent) * 31 + static_cast<size_t>(k.kind);
      return h * 0x9e3779b97f4a7c15ULL ^
             (static_cast<size_t>(static_cast<uint32_t>(k.a)) << 32 | static_cast<uint32_t>(k.b));
    }
  };

  // The op's expression and whether the oracle admits it, from the memo or computed once.
  struct MemoEntry {
    int expr = -1;
    bool admitted = true;
  };
  MemoEntry memo_expr(const Graph& block, OpKind kind, int x, int y, int attr) {
    const ExprKey key{op_expr_extent(block, kind, x, y, attr), static_cast<int>(kind),
                      x >= 0 ? exprs_[static_cast<size_t>(x)] : -1, exprs_[static_cast<size_t>(y)]};
    if (auto it = expr_memo_.find(key); it != expr_memo_.end()) return it->second;
    if (expr_memo_.size() >= kMaxMemo) expr_memo_.clear();  // a long search's memo stays bounded
    Op op;
    op.kind = kind;
    op.inputs = x >= 0 ? std::vector<int>{x, y} : std::vector<int>{y};
    op.dim = attr;
    op.fmap = attr;
    MemoEntry entry;
    entry.expr = op_abstract_expr(pool_, block, op, exprs_, input_exprs_);
    entry.admitted = !limits_.prune || oracle_->admits(entry.expr);
    expr_memo_.emplace(key, entry);
    return entry;
  }

  void try_op(Graph& block, OpKind kind, int x, int y, int attr, const Rank& rank, int ops, int accums) {
    if (!fits(block, kind, x, y)) return;
    // The expression first: most extensions are pruned, and this costs less than building the op.
    const MemoEntry memo = memo_expr(block, kind, x, y, attr);
    const int expr = memo.expr;
    if (!memo.admitted) {
      ++result_.stats.pruned;
      return;
    }
    try {
      if (kind == OpKind::Accum) {
        block.accum(y, attr);
      } else if (kind == OpKind::Sum) {
        block.sum(y, attr);
      } else if (x >= 0) {
        block.binary(kind, x, y);
      } else {
        block.unary(kind, y);
      }
    } catch (const Error&) {
      return;  // shapes or loop phases do not fit
    }
    int64_t bytes = element_count(block.tensor(static_cast<int>(block.tensors().size()) - 1).shape) *
                    limits_.element_bytes;
    if (limits_.max_shared_bytes > 0 && shared_bytes_ + bytes > limits_.max_shared_bytes) {
      ++result_.stats.over_memory;
      block.pop_op();
      return;
    }
    shared_bytes_ += bytes;
    exprs_.push_back(expr);
    // Unused tensors: the new one, less its operands that had no use yet. A candidate uses every op, and
    // one more op lowers the count by at most one, so more unused tensors than ops left plus one is a dead
    // end.
    const std::vector<int> inputs = block.ops().back().inputs;  // a copy: extend() grows block.ops()
    uses_.push_back(0);
    int unused_before = unused_;
    for (size_t k = 0; k < inputs.size(); ++k) {
      int in = inputs[k];
      bool repeated = std::find(inputs.begin(), inputs.begin() + k, in) != inputs.begin() + k;
      if (in >= fixed_ && uses_[in] == 0 && !repeated) --unused_;
    }
    for (int in : inputs) ++uses_[in];
    ++unused_;
    if (limits_.prune && unused_ - 1 > limits_.max_ops - (ops + 1)) {
      ++result_.stats.pruned;
    } else {
      extend(block, rank, ops + 1, accums + (kind == OpKind::Accum));
    }
    for (int in : inputs) --uses_[in];
    uses_.pop_back();
    unused_ = unused_before;
    exprs_.pop_back();
    shared_bytes_ -= bytes;
    block.pop_op();
  }

  // Every op other than the iterators and constants leads to `t`.
  bool all_live(const Graph& block, int t) const {
    std::vector<bool> live(block.tensors().size(), false);
    live[t] = true;
    for (int i = static_cast<int>(block.ops().size()) - 1; i >= 0; --i) {
      const Op& op = block.ops()[i];
      if (!live[op.outputs[0]]) {
        if (op.outputs[0] >= fixed_) return false;
        continue;
      }
      for (int id : op.inputs) live[id] = true;
    }
    return true;
  }

  bool over_budget() const {
    return limits_.budget_seconds > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() >
               limits_.budget_seconds;
  }

  void try_save(const Graph& block, int t) {
    if (block.tensor(t).phase == Phase::Loop || !oracle_->equivalent(exprs_[t]) || !all_live(block, t))
      return;
    // Verifying a candidate evaluates both graphs at the program's sizes (seconds for a 4096 x 4096
    // matmul): past the budget, stop rather than start another.
    if (over_budget()) {
      result_.stats.stopped = true;
      return;
    }
    Graph candidate = block;
    try {
      candidate.save(t, schedule_.omap, "out");
    } catch (const Error&) {
      return;
    }
    if (candidate.tensor(candidate.outputs()[0]).shape != target_shape_) return;
    Graph kernel = Graph::kernel(program_.name());
    std::vector<int> operands;
    for (int id : program_.inputs())
      operands.push_back(kernel.input(program_.tensor(id).name, program_.tensor(id).shape));
    std::vector<int> outs =
        kernel.block_op(operands, std::move(candidate), {program_.tensor(program_.outputs()[0]).name});
    kernel.add_output(outs[0]);
    ++result_.stats.candidates;
    if (limits_.max_memory_bytes > 0 && verification_bytes(program_, kernel) > limits_.max_memory_bytes) {
      ++result_.stats.over_memory_budget;
      return;
    }
    VerifyResult r = verify_equivalent(program_, kernel,
                                       {.trials = limits_.verify_trials,
                                        .seed = limits_.seed,
                                        .reference = limits_.reference_trials,
                                        .bound = false});
    if (r.verdict == Verdict::Equivalent) {
      ++result_.stats.verified;
      result_.found.push_back(std::move(kernel));
    }
  }

  const Graph& program_;
  const BlockSchedule& schedule_;
  const SearchLimits& limits_;
  ExprPool pool_;
  int target_ = -1;
  Shape target_shape_;
  std::vector<int> input_exprs_;
  std::optional<SubexpressionOracle> oracle_;
  static constexpr size_t kMaxMemo = size_t{1} << 22;
  std::unordered_map<ExprKey, MemoEntry, ExprKeyHash> expr_memo_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  int fixed_ = 0;             // the iterators and constants made before the enumeration
  std::vector<int> exprs_;    // the abstract expression of each tensor of the block graph being built
  std::vector<int> uses_;     // per tensor of that graph, how many ops use it
  int unused_ = 0;            // its tensors made by the enumeration that no op uses yet
  int64_t shared_bytes_ = 0;  // the bytes of all its tensors
  SearchResult result_;
};

}  // namespace

SearchResult search_block_graphs(const Graph& program, const BlockSchedule& schedule,
                                 const SearchLimits& limits) {
  return BlockSearch(program, schedule, limits).run();
}

}  // namespace tilevm::superopt
