// Shared-memory planning by liveness (see the header). Statements are numbered in program order; a tensor's
// interval is [its AllocateShared, its FreeShared or last use], widened to the end of every loop that holds
// a use but not the allocation. Placement is first-fit in allocation order. The intervals are keyed by the
// tensors' variables only while the pass runs; what it returns is in the program.
#include "tilevm/transform/plan_shared_memory.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/mutator.h"
#include "tilevm/type/packing.h"

namespace tilevm::transform {

namespace {

struct Interval {
  const ir::VarNode* var = nullptr;
  int64_t begin = 0, end = 0;
  int64_t bytes = 0, align = 16;
  bool freed = false;
  bool async_dst = false;  // a CopyAsync destination: its copies may land after its last use
  int64_t last_copy = 0;   // the last CopyAsync into it
  // Barriers and CopyTma destinations live to the end of the program: a barrier's phases and a bulk copy
  // in flight have no wait that would tell the planner they are done.
  bool to_end = false;
};

class Liveness {
 public:
  std::vector<Interval> intervals;
  std::vector<int64_t> wait_all;  // positions of CopyAsyncWaitGroup(0)
  int64_t end() const { return pos_; }

  void walk(const ir::Block& block) {
    for (const ir::Stmt& s : block) stmt(s);
  }

 private:
  int64_t pos_ = 0;
  std::unordered_map<const ir::VarNode*, size_t> index_;

  void use(const ir::Var& v, int64_t at) {
    auto it = index_.find(v.get());
    if (it == index_.end()) return;
    Interval& iv = intervals[it->second];
    if (!iv.freed) iv.end = std::max(iv.end, at);
  }

  // A shared tensor that an asynchronous unit (the TMA, the tensor cores) reads or writes: kept to the end of
  // the program, aligned to `align` bytes, or 1024 when its layout is swizzled.
  void async_operand(const ir::Var& v, int64_t align) {
    auto it = index_.find(v.get());
    if (it == index_.end()) return;
    Interval& iv = intervals[it->second];
    const ir::TensorType& t = *v->type.tensor;
    iv.to_end = true;
    iv.align = std::max<int64_t>(iv.align, t.layout && t.layout->has_swizzle() ? 1024 : align);
  }

  void stmt(const ir::Stmt& s) {
    const int64_t at = pos_++;
    if (const auto* is = s->as<ir::InstStmt>()) {
      if (const auto* a = is->inst->as<ir::AllocateSharedInst>()) {
        if (!is->results.empty()) {
          const ir::Var& v = is->results[0];
          const ir::TensorType& t = *v->type.tensor;
          Interval iv;
          iv.var = v.get();
          iv.begin = iv.end = at;
          iv.bytes = (packed_bytes(a->dtype, t.layout ? t.layout->num_locals() : 0) + 15) / 16 * 16;
          iv.align = t.layout && t.layout->has_swizzle() ? 128 : 16;
          index_[v.get()] = intervals.size();
          intervals.push_back(iv);
        }
        return;
      }
      if (const auto* a = is->inst->as<ir::AllocateBarrierInst>()) {
        (void)a;
        if (!is->results.empty()) {
          const ir::Var& v = is->results[0];
          Interval iv;
          iv.var = v.get();
          iv.begin = iv.end = at;
          iv.bytes = (8 * v->type.tensor->layout->num_locals() + 15) / 16 * 16;
          iv.to_end = true;
          index_[v.get()] = intervals.size();
          intervals.push_back(iv);
        }
        return;
      }
      if (const auto* c = is->inst->as<ir::CopyTmaInst>()) {
        // The tensor-memory accelerator writes shared memory at 128-byte aligned addresses, and a swizzled
        // tile at the swizzle's period (8 rows of up to 128 bytes).
        async_operand(c->dst.tensor, 128);
      }
      // A TMA store reads its source asynchronously, from a 128-byte aligned address, until a StoreTmaWait
      // the planner does not follow: the source lives to the end, as a copy's destination does.
      if (const auto* c = is->inst->as<ir::StoreTmaInst>()) async_operand(c->src.tensor, 128);
      if (const auto* d = is->inst->as<ir::DotInst>()) {
        // A synchronous Dot on shared tiles is wgmma on sm_90a: its descriptors need a swizzled tile at the
        // swizzle's period too (the tile layer's Gemm lowers to it), though it finishes before the next
        // instruction.
        for (const ir::TensorArg* x : {&d->a, &d->b}) {
          auto it = index_.find(x->tensor.get());
          if (it == index_.end()) continue;
          const ir::TensorType& t = *x->tensor->type.tensor;
          if (t.layout && t.layout->has_swizzle()) intervals[it->second].align = 1024;
        }
      }
      if (const auto* d = is->inst->as<ir::DotAsyncInst>()) {
        // The tensor cores read the operands until a later wait that the plan does not track, and a swizzled
        // operand's descriptor needs it aligned to the swizzle's period.
        async_operand(d->a.tensor, 16);
        async_operand(d->b.tensor, 16);
      }
      if (const auto* f = is->inst->as<ir::FreeSharedInst>()) {
        auto it = index_.find(f->tensor.get());
        if (it != index_.end()) {
          intervals[it->second].end = std::max(intervals[it->second].end, at);
          intervals[it->second].freed = true;
        }
        return;
      }
      if (const auto* w = is->inst->as<ir::CopyAsyncWaitGroupInst>()) {
        const auto n = ir::as_const_int(w->n);
        if (n && *n == 0) wait_all.push_back(at);
      }
      if (const auto* c = is->inst->as<ir::CopyAsyncInst>()) {
        auto it = index_.find(c->dst.tensor.get());
        if (it != index_.end()) {
          intervals[it->second].async_dst = true;
          intervals[it->second].last_copy = at;
        }
      }
      for (const ir::Var& v : is->inst->used_vars()) use(v, at);
      return;
    }
    auto loop = [&](const ir::Block& body) {
      // Tensors allocated before the loop and used inside it live to its end: the next iteration reads
      // them again.
      const size_t first = intervals.size();
      const int64_t start = pos_;
      walk(body);
      const int64_t end = pos_;
      for (size_t k = 0; k < first; ++k) {
        if (!intervals[k].freed && intervals[k].end >= start)
          intervals[k].end = std::max(intervals[k].end, end);
      }
    };
    if (const auto* f = s->as<ir::ForStmt>()) {
      loop(f->body);
    } else if (const auto* w = s->as<ir::WhileStmt>()) {
      loop(w->body);
    } else if (const auto* i = s->as<ir::IfStmt>()) {
      for (const ir::Block& b : i->bodies) walk(b);
      walk(i->else_body);
    } else if (const auto* r = s->as<ir::RegionStmt>()) {
      // A region allocates nothing (the verifier's rule), so the tensors it uses were allocated before its
      // section and live through it whichever region runs when.
      walk(r->body);
    }
  }
};

// Writes each AllocateShared's placement into its instruction.
class Place : public ir::IRMutator {
 public:
  explicit Place(const std::unordered_map<const ir::VarNode*, ir::SharedPlacement>& placements)
      : placements_(placements) {}

  ir::Stmt mutate_inst_stmt(const ir::Stmt& s, const ir::InstStmt& node) override {
    if (node.results.empty()) return s;
    if (const auto* a = node.inst->as<ir::AllocateSharedInst>()) return place(s, node, *a);
    if (const auto* a = node.inst->as<ir::AllocateBarrierInst>()) return place(s, node, *a);
    return s;
  }

 private:
  template <typename Alloc>
  ir::Stmt place(const ir::Stmt& s, const ir::InstStmt& node, const Alloc& a) {
    const ir::SharedPlacement& placement = placements_.at(node.results[0].get());
    if (a.placement == placement) return s;
    auto placed = std::make_shared<Alloc>(a);
    placed->placement = placement;
    return std::make_shared<ir::InstStmt>(node.results, placed, node.loc);
  }

  const std::unordered_map<const ir::VarNode*, ir::SharedPlacement>& placements_;
};

}  // namespace

ir::Program plan_shared_memory(ir::Program program) {
  Liveness live;
  live.walk(program.body);
  // A CopyAsync destination stays reserved until a CopyAsyncWaitGroup(0) after its last copy (or to the end
  // of the program): a copy still in flight must not land in a tensor that reuses its space.
  for (Interval& iv : live.intervals) {
    if (iv.to_end) iv.end = live.end();
    if (!iv.async_dst || iv.freed) continue;
    int64_t until = live.end();
    for (int64_t w : live.wait_all)
      if (w > iv.last_copy) {
        until = w;
        break;
      }
    iv.end = std::max(iv.end, until);
  }
  std::unordered_map<const ir::VarNode*, ir::SharedPlacement> placements;
  int64_t total_bytes = 0;
  std::vector<std::pair<const Interval*, int64_t>> placed;
  for (const Interval& iv : live.intervals) {
    // First fit: the lowest aligned offset that overlaps no live placed tensor.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const auto& [other, off] : placed)
      if (!(other->end < iv.begin || iv.end < other->begin)) busy.emplace_back(off, off + other->bytes);
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (const auto& [b, e] : busy) {
      if (off + iv.bytes <= b) break;
      off = std::max(off, (e + iv.align - 1) / iv.align * iv.align);
    }
    placed.emplace_back(&iv, off);
    placements[iv.var] = {off, iv.bytes};
    total_bytes = std::max(total_bytes, off + iv.bytes);
  }
  ir::Program out = Place(placements).mutate_program(program);
  out.shared_bytes = total_bytes;
  return out;
}

}  // namespace tilevm::transform
