// Statements: block-level control flow around instructions (docs/language.md section 4).
#pragma once

#include <memory>
#include <vector>

#include "tilevm/ir/element_expr.h"
#include "tilevm/ir/inst/inst.h"

namespace tilevm::ir {

enum class StmtKind { Assign, Inst, If, For, While, Break, Continue, Return, Region, Parallel };

struct StmtNode {
  StmtKind kind;
  SourceLoc loc;
  StmtNode(StmtKind k, SourceLoc l) : kind(k), loc(l) {}
  virtual ~StmtNode() = default;
  template <typename T>
  const T* as() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }
};
using Stmt = std::shared_ptr<const StmtNode>;
using Block = std::vector<Stmt>;

// `x = expr` for a scalar. `defines` is true where the statement introduces x (its first assignment, with
// x's type taken from the value), false where it updates an existing scalar variable.
struct AssignStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Assign;
  Var var;
  Expr value;
  bool defines;
  AssignStmt(Var v, Expr e, bool def, SourceLoc l = {})
      : StmtNode(kKind, l), var(std::move(v)), value(std::move(e)), defines(def) {}
};

// `a, b = Instr(...)` or a bare `Instr(...)`: `results` are the variables the instruction defines (empty for
// instructions without results or when the statement is bare).
struct InstStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Inst;
  std::vector<Var> results;
  Inst inst;
  InstStmt(std::vector<Var> r, Inst i, SourceLoc l = {})
      : StmtNode(kKind, l), results(std::move(r)), inst(std::move(i)) {}
};

// `if c0: ... elif c1: ... else: ...`; conditions are block-uniform bools.
struct IfStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::If;
  std::vector<Expr> conditions;  // the if and every elif
  std::vector<Block> bodies;     // one per condition
  Block else_body;               // empty when there is no else
  bool has_else = false;
  IfStmt(std::vector<Expr> c, std::vector<Block> b, Block e, bool has_e, SourceLoc l = {})
      : StmtNode(kKind, l),
        conditions(std::move(c)),
        bodies(std::move(b)),
        else_body(std::move(e)),
        has_else(has_e) {}
};

// How a loop is to be scheduled: `for k in range(0, n, unroll=4, stages=3):`. Hints for the passes and the
// code generator; they never change what the loop computes (docs/language.md, "Loop attributes").
struct LoopAttrs {
  static constexpr int kFullUnroll = 0;
  int unroll = 1;    // 1: not unrolled; n > 1: unrolled by n; kFullUnroll: completely (`unroll=True`)
  int stages = 1;    // software-pipeline stages; 1: not pipelined
  bool tma = false;  // the tile layer's pipeline copies with the TMA on Hopper (tile/pipeline_loops.h)
  // With tma: a producer warpgroup issues the copies and the block's warpgroups consume (pipeline_loops.h)
  bool warp_specialize = false;
  bool operator==(const LoopAttrs&) const = default;
};

// `for v in range(start, stop, step):` with integer bounds evaluated once, before the first iteration.
struct ForStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  Var var;
  Expr start, stop, step;
  Block body;
  LoopAttrs attrs;
  ForStmt(Var v, Expr b, Expr e, Expr s, Block body_, SourceLoc l = {}, LoopAttrs a = {})
      : StmtNode(kKind, l),
        var(std::move(v)),
        start(std::move(b)),
        stop(std::move(e)),
        step(std::move(s)),
        body(std::move(body_)),
        attrs(a) {}
};

struct WhileStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::While;
  Expr condition;
  Block body;
  WhileStmt(Expr c, Block b, SourceLoc l = {})
      : StmtNode(kKind, l), condition(std::move(c)), body(std::move(b)) {}
};

struct BreakStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Break;
  explicit BreakStmt(SourceLoc l = {}) : StmtNode(kKind, l) {}
};

struct ContinueStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Continue;
  explicit ContinueStmt(SourceLoc l = {}) : StmtNode(kKind, l) {}
};

// `return`: the block stops (like Exit()).
struct ReturnStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Return;
  explicit ReturnStmt(SourceLoc l = {}) : StmtNode(kKind, l) {}
};

// `with Warpgroups(first, stop, registers=N):` (docs/language.md section 5, "Warp-specialized regions"):
// the body is run by the warpgroups [first, stop) of the block only (128 threads each), for which it is "the
// block": its register layouts have 128 * (stop - first) threads, numbered from the region's first thread,
// and its Synchronize() waits for the region's threads only. Consecutive regions of one block form a
// section: they run concurrently, and the block continues after the section once each has finished.
// `registers` is the per-thread register budget its warps set on entry (setmaxnreg; 0: unchanged).
struct RegionStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Region;
  static constexpr int64_t kWarpgroupThreads = 128;
  int64_t first = 0, stop = 1;  // warpgroups [first, stop)
  int64_t registers = 0;
  Block body;
  RegionStmt(int64_t f, int64_t s, int64_t r, Block b, SourceLoc l = {})
      : StmtNode(kKind, l), first(f), stop(s), registers(r), body(std::move(b)) {}
  // Saturated at INT64_MAX where first and stop (from the program, checked by the verifier) would overflow,
  // so that a verifier reading them before its range check stays defined.
  int64_t threads() const {
    int64_t n = 0, t = 0;
    if (__builtin_sub_overflow(stop, first, &n) || __builtin_mul_overflow(n, kWarpgroupThreads, &t))
      return INT64_MAX;
    return t;
  }
  int64_t first_thread() const {
    int64_t t = 0;
    return __builtin_mul_overflow(first, kWarpgroupThreads, &t) ? INT64_MAX : t;
  }
};

// `for i, j in Parallel(BM, BN):` over element assignments (the tile layer's element-wise loop,
// docs/language.md "The tile layer"): each statement of the body is applied to every index of the extents,
// in order, as if to whole tiles at once. The loop variables are i32 scalars that only the body's indices
// see. No backend runs it: tile/lower_parallel.h turns each statement into whole-tile instructions.
struct ParallelStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Parallel;
  std::vector<Var> vars;
  std::vector<Expr> extents;  // one per variable: compile-time constants >= 1
  std::vector<ElementAssign> body;
  ParallelStmt(std::vector<Var> v, std::vector<Expr> e, std::vector<ElementAssign> b, SourceLoc l = {})
      : StmtNode(kKind, l), vars(std::move(v)), extents(std::move(e)), body(std::move(b)) {}
};

}  // namespace tilevm::ir
