// Which barriers each warp may arrive on by itself (Emitter::collect_barrier_arrivals, emit_tma.cpp).
//
// A BarrierArrive of a region is one arrival that stands for every thread's earlier instructions. The
// plain code is a barrier across the region's warps and one thread's mbarrier.arrive. With W warps, the
// mbarrier may instead count W arrivals per region arrival, each warp arriving after its own __syncwarp:
// the phase then completes when every warp has arrived, the same event, and no warp waits for the others
// (two consumer warpgroups of a pipeline stop running in lockstep). That is only the same event while no
// warp can arrive a second time on the same barrier before every warp has arrived the first time: a warp
// that ran ahead would be counted in the phase in place of a slow one. So it is taken only where the
// pipeline's own protocol rules that out, checked on the program's form:
//
//   producer P (another region)             consumer R (regions of W warps each)
//   for j in ...:                           for k in ...:
//       BarrierWait(b[(j + c') % S], ...)       BarrierWait(f[k % S], ...)     (before the arrival)
//       BarrierArrive(f[j % S], tx=...)         ...
//                                               BarrierArrive(b[(k + c) % S])  (possibly under an if)
//
// b and f have S barriers each, f is arrived on only so (with transaction bytes, by regions other than
// R), each region arrives at one place, an index may name a variable assigned once, at the top of the loop
// body (`stage = k % S`), each loop counts k = 0, 1, 2, ... (start 0, step 1, its variable not assigned)
// and is in no other (a region in no loop), so that it runs once and its iterations k are P's iterations j.
// R's arrivals on one barrier b[s] are then at least S iterations apart, k1 < k2; of the S iterations k' in
// (k2 - S, k2], one has k' + c' = k2 + c (mod S), and R waits on f[k' % S] before its arrival at k2; P fills
// f[k' % S] only after its wait on b[(k' + c') % S] = b[s] returned. That wait is for the newest phase of
// b[s] that can complete, the one holding R's arrival at k1: a parity wait returns for the most recent phase
// of its parity, and one that named an older phase while a newer could complete would wait two phases ahead,
// a deadlock (the program's correctness, which the interpreter checks over its schedules). So every warp's
// second arrival on b[s] follows the completion of the phase of its first.
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "emitter.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/visitor.h"

namespace tilevm::codegen::cuda {

namespace {

// One BarrierArrive or BarrierWait: where it is and the barrier index, resolved through the loop body's
// assignments.
struct Site {
  const ir::RegionStmt* region = nullptr;
  const ir::ForStmt* loop = nullptr;  // the innermost loop around it (null: none)
  size_t top = 0;                     // the loop body's statement that holds it
  bool direct = false;                // that statement is the site itself (not an if around it)
  ir::Expr index;                     // the single index subscript, or null
  bool tx = false;                    // an arrival with transaction bytes
  int64_t threads = 0;                // of the region or block
  bool outermost = false;             // the loop is the region's own, run once: in no other loop
};

struct Sites {
  std::map<const ir::VarNode*, std::vector<Site>> arrivals, waits;
  std::map<const ir::VarNode*, int64_t> extents;  // barriers of one dimension
  std::map<const ir::VarNode*, int64_t> counts;   // their arrival counts
};

// How many times the program assigns each variable: an index names a variable only where its one
// assignment is the loop body's own (an assignment under an if or in another loop could change it).
class Assignments : public ir::IRVisitor {
 public:
  std::map<const ir::VarNode*, int> count;
  void visit_assign(const ir::AssignStmt& s) override {
    ++count[s.var.get()];
    ir::IRVisitor::visit_assign(s);
  }
};

class Walk {
 public:
  Walk(int64_t block_threads, std::map<const ir::VarNode*, int> assignments)
      : threads_(block_threads), assignments_(std::move(assignments)) {}
  Sites sites;

  void block(const ir::Block& b) {
    for (size_t i = 0; i < b.size(); ++i) {
      if (depth_ == 1) top_ = i;
      stmt(b[i]);
    }
  }

 private:
  void stmt(const ir::Stmt& s) {
    if (const auto* r = s->as<ir::RegionStmt>()) {
      const auto saved = std::tuple(region_, threads_, loop_, depth_, lets_, loops_);
      region_ = r, threads_ = r->threads(), loop_ = nullptr, depth_ = 0, lets_.clear();
      block(r->body);
      std::tie(region_, threads_, loop_, depth_, lets_, loops_) = saved;
    } else if (const auto* f = s->as<ir::ForStmt>()) {
      const auto saved = std::tuple(loop_, depth_, top_, lets_);
      // The argument counts iterations 0, 1, 2, ...: a loop from elsewhere, by another step, or whose
      // variable the body assigns has no k to reason with.
      loop_ = counts_up(*f) ? f : nullptr, depth_ = 1, lets_.clear(), ++loops_;
      block(f->body);
      --loops_;
      std::tie(loop_, depth_, top_, lets_) = saved;
    } else if (const auto* w = s->as<ir::WhileStmt>()) {
      const auto saved = std::tuple(loop_, depth_);
      loop_ = nullptr, depth_ = 0, ++loops_;  // no loop variable to reason with
      block(w->body);
      --loops_;
      std::tie(loop_, depth_) = saved;
    } else if (const auto* i = s->as<ir::IfStmt>()) {
      ++depth_;
      for (const ir::Block& b : i->bodies) block(b);
      block(i->else_body);
      --depth_;
    } else if (const auto* a = s->as<ir::AssignStmt>()) {
      if (depth_ == 1 && assignments_[a->var.get()] == 1) lets_[a->var.get()] = a->value;
    } else if (const auto* is = s->as<ir::InstStmt>()) {
      inst(*is);
    }
  }

  void inst(const ir::InstStmt& s) {
    if (const auto* b = s.inst->as<ir::AllocateBarrierInst>();
        b && s.results.size() == 1 && b->shape.size() == 1)
      if (const auto* e = b->shape[0]->as<ir::IntImm>()) {
        sites.extents[s.results[0].get()] = e->value;
        sites.counts[s.results[0].get()] = b->count;
      }
    if (const auto* a = s.inst->as<ir::BarrierArriveInst>())
      sites.arrivals[a->barrier.tensor.get()].push_back(site(a->barrier, a->tx != nullptr));
    if (const auto* w = s.inst->as<ir::BarrierWaitInst>())
      sites.waits[w->barrier.tensor.get()].push_back(site(w->barrier, false));
  }

  Site site(const ir::TensorArg& arg, bool tx) const {
    Site s{region_, loop_, top_, depth_ == 1, nullptr, tx, threads_, loops_ == 1};
    if (arg.slices.size() == 1 && arg.slices[0].kind == ir::Slice::Kind::Index)
      s.index = resolve(arg.slices[0].value);
    return s;
  }

  bool counts_up(const ir::ForStmt& f) {
    auto is = [](const ir::Expr& e, int64_t v) {
      const auto* i = e ? e->as<ir::IntImm>() : nullptr;
      return i && i->value == v;
    };
    return is(f.start, 0) && is(f.step, 1) && assignments_[f.var.get()] == 0;
  }

  ir::Expr resolve(const ir::Expr& e) const {
    if (const auto* v = e->as<ir::VarRef>()) {
      auto it = lets_.find(v->var.get());
      if (it != lets_.end()) return it->second;
    }
    return e;
  }

  const ir::RegionStmt* region_ = nullptr;
  int64_t threads_;
  std::map<const ir::VarNode*, int> assignments_;
  const ir::ForStmt* loop_ = nullptr;
  int depth_ = 0;  // statement lists below the innermost loop (1: its body)
  size_t top_ = 0;
  std::map<const ir::VarNode*, ir::Expr> lets_;
  int loops_ = 0;  // loops around the current statement, those outside the region included
};

// c where `e` is (v + c) % S, (v - c) % S or v % S for the loop variable v; nullopt otherwise.
std::optional<int64_t> stage_offset(const ir::Expr& e, const ir::ForStmt& loop, int64_t extent) {
  const auto* mod = e ? e->as<ir::BinaryExpr>() : nullptr;
  if (!mod || mod->op != ir::BinaryOp::Mod) return std::nullopt;
  const auto* s = mod->b->as<ir::IntImm>();
  if (!s || s->value != extent) return std::nullopt;
  auto is_var = [&](const ir::Expr& x) {
    const auto* v = x->as<ir::VarRef>();
    return v && v->var == loop.var;
  };
  if (is_var(mod->a)) return 0;
  const auto* sum = mod->a->as<ir::BinaryExpr>();
  if (!sum || (sum->op != ir::BinaryOp::Add && sum->op != ir::BinaryOp::Sub) || !is_var(sum->a))
    return std::nullopt;
  const auto* c = sum->b->as<ir::IntImm>();
  if (!c) return std::nullopt;
  return sum->op == ir::BinaryOp::Add ? c->value : -c->value;
}

// Whether no region arrives at two places (two statements, or one in each of two loops): the argument
// above follows one arrival site through one loop.
bool one_site_per_region(const std::vector<Site>& arrivals) {
  std::set<const ir::RegionStmt*> seen;
  for (const Site& a : arrivals)
    if (!seen.insert(a.region).second) return false;
  return true;
}

// Whether f is a producer's barrier for b: every arrival on f carries transaction bytes, is made by none of
// `consumers`, at f[j % S] in a loop over j whose body waits on b[(j + c') % S] before it.
bool filled_after_waiting(const Sites& sites, const ir::VarNode* f, const ir::VarNode* b, int64_t extent,
                          const std::set<const ir::RegionStmt*>& consumers) {
  auto arrivals = sites.arrivals.find(f);
  if (arrivals == sites.arrivals.end() || !one_site_per_region(arrivals->second)) return false;
  auto waits = sites.waits.find(b);
  for (const Site& a : arrivals->second) {
    if (!a.tx || !a.region || consumers.count(a.region) || !a.loop || !a.outermost ||
        stage_offset(a.index, *a.loop, extent) != 0)
      return false;
    bool waited = false;
    for (const Site& w : waits == sites.waits.end() ? std::vector<Site>{} : waits->second)
      waited |= w.region == a.region && w.loop == a.loop && w.direct && w.top < a.top &&
                stage_offset(w.index, *w.loop, extent).has_value();
    if (!waited) return false;
  }
  return true;
}

}  // namespace

void Emitter::collect_barrier_arrivals() {
  Assignments assignments;
  assignments.visit_program(program_);
  Walk walk(threads_, std::move(assignments.count));
  walk.block(program_.body);
  const Sites& sites = walk.sites;
  for (const auto& [b, arrivals] : sites.arrivals) {
    auto extent = sites.extents.find(b);
    if (extent == sites.extents.end()) continue;
    const int64_t s = extent->second;
    std::set<const ir::RegionStmt*> consumers;
    for (const Site& a : arrivals) consumers.insert(a.region);
    // The per-warp count must fit the mbarrier's (at most 2^20 - 1 arrivals a phase).
    constexpr int64_t kMaxCount = (int64_t{1} << 20) - 1;
    bool ok = !consumers.count(nullptr) && one_site_per_region(arrivals) &&
              sites.counts.at(b) * (arrivals[0].threads / 32) <= kMaxCount;
    for (const Site& a : arrivals) {
      ok = ok && !a.tx && a.threads % 32 == 0 && a.threads == arrivals[0].threads && a.loop && a.outermost &&
           stage_offset(a.index, *a.loop, s).has_value();
      if (!ok) break;
      // A wait on f[k % S] earlier in the same loop body, f a producer's barrier for b.
      bool guarded = false;
      for (const auto& [f, waits] : sites.waits) {
        if (f == b || !sites.extents.count(f) || sites.extents.at(f) != s) continue;
        for (const Site& w : waits)
          guarded = guarded || (w.region == a.region && w.loop == a.loop && w.direct && w.top < a.top &&
                                stage_offset(w.index, *w.loop, s) == 0 &&
                                filled_after_waiting(sites, f, b, s, consumers));
      }
      ok = guarded;
    }
    if (ok) arrival_warps_[b] = arrivals[0].threads / 32;
  }
}

}  // namespace tilevm::codegen::cuda
