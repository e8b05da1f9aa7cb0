// Software pipelining of loops with stages= (pipeline_loops.h).
#include "tilevm/tile/pipeline_loops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <map>
#include <set>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/mutator.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/target/limits.h"
#include "tilevm/tile/tile_layouts.h"
#include "tilevm/tile/tile_program.h"
#include "warp_specialize.h"

namespace tilevm::tile {

namespace {

using ir::Scope;

// Arithmetic that leaves out the identities (a loop from 0 by 1 is the common case; the printed program
// should read as the author would have written it).
bool is_const(const ir::Expr& e, int64_t v) {
  auto c = ir::as_const_int(e);
  return c && *c == v;
}
ir::Expr add(ir::Expr a, ir::Expr b) {
  if (is_const(a, 0)) return b;
  if (is_const(b, 0)) return a;
  return ir::make_binary(ir::BinaryOp::Add, std::move(a), std::move(b));
}
ir::Expr sub(ir::Expr a, ir::Expr b) {
  if (is_const(b, 0)) return a;
  return ir::make_binary(ir::BinaryOp::Sub, std::move(a), std::move(b));
}
ir::Expr mul(ir::Expr a, ir::Expr b) {
  if (is_const(b, 1)) return a;
  if (is_const(a, 1)) return b;
  return ir::make_binary(ir::BinaryOp::Mul, std::move(a), std::move(b));
}
ir::Expr div(ir::Expr a, ir::Expr b) {
  if (is_const(b, 1)) return a;
  return ir::make_binary(ir::BinaryOp::Div, std::move(a), std::move(b));
}

// What the instructions of a program or block do with variables: how often each is an operand (read or
// written), how often written, and which the block's statements define.
class Accesses : public ir::IRVisitor {
 public:
  std::map<const ir::VarNode*, int> uses, writes;
  std::set<const ir::VarNode*> defined;
  void visit_inst_stmt(const ir::InstStmt& s) override {
    for (const ir::Var& r : s.results) defined.insert(r.get());
    ir::IRVisitor::visit_inst_stmt(s);
  }
  void visit_assign(const ir::AssignStmt& s) override {
    defined.insert(s.var.get());
    ir::IRVisitor::visit_assign(s);
  }
  void visit_inst(const ir::Inst& inst) override {
    for (const ir::Var& v : inst->used_vars()) ++uses[v.get()];
    for (const ir::Var& v : inst->writes()) ++writes[v.get()];
    ir::IRVisitor::visit_inst(inst);
  }
  void visit_parallel(const ir::ParallelStmt& s) override {
    for (const ir::ElementAssign& a : s.body) {
      ir::for_each_access(a.value, [&](const ir::ElementAccess& e) { ++uses[e.tensor.get()]; });
      ++uses[a.target.tensor.get()];
      ++writes[a.target.tensor.get()];
    }
    ir::IRVisitor::visit_parallel(s);
  }
};

// Whether `body` has a break or continue of its own loop (not of a loop inside it).
bool leaves_early(const ir::Block& body) {
  for (const ir::Stmt& s : body) {
    if (!s) continue;
    if (s->kind == ir::StmtKind::Break || s->kind == ir::StmtKind::Continue) return true;
    if (const auto* i = s->as<ir::IfStmt>()) {
      for (const ir::Block& b : i->bodies)
        if (leaves_early(b)) return true;
      if (leaves_early(i->else_body)) return true;
    }
  }
  return false;
}

// The copies of a loop body that can be pipelined (see the header): into a shared tensor allocated before
// the loop, used nowhere else and written by nothing else.
std::vector<const ir::InstStmt*> pipelinable_copies(const ir::ForStmt& f,
                                                    const std::map<const ir::VarNode*, int>& all_uses) {
  Accesses inside;
  inside.visit_block(f.body);
  std::vector<const ir::InstStmt*> out;
  for (const ir::Stmt& s : f.body) {
    const auto* is = s ? s->as<ir::InstStmt>() : nullptr;
    const auto* c = is ? is->inst->as<ir::CopyInst>() : nullptr;
    if (!c) continue;
    const ir::VarNode* x = c->dst.tensor.get();
    const ir::TensorType& dt = c->dst.type();
    if (c->src.type().scope != Scope::Global || dt.scope != Scope::Shared || !c->dst.slices.empty() ||
        dt.dtype != c->src.type().dtype || inside.defined.count(x))
      continue;
    auto total = all_uses.find(x);
    auto in = inside.uses.find(x);
    if (total == all_uses.end() || in == inside.uses.end() || total->second != in->second) continue;
    if (inside.writes[x] != 1) continue;
    // Issued iterations ahead, the copy's view may only use what is known before the loop (and the loop
    // variable, which the issue substitutes): not a scalar the body computes (`kk = ks + k * SPLIT`).
    bool body_scalar = false;
    ir::for_each_expr(c->src, [&](const ir::Expr& e) { body_scalar |= reads_any(e, inside.defined); });
    if (body_scalar) continue;
    out.push_back(is);
  }
  return out;
}

class Pipeline : public ir::IRMutator {
 public:
  Pipeline(std::map<const ir::VarNode*, int> uses, const target::Target& target, Diagnostics& diags)
      : uses_(std::move(uses)), target_(target), diags_(diags) {}
  bool failed() const { return failed_; }

  ir::Program run(const ir::Program& p) {
    // First the loops (which decide the buffered tensors), then the allocations of those tensors.
    body_ = &p.body;
    threads_ = p.threads;
    ir::Program out = mutate_program(p);
    if (specialized_) out.threads = p.threads + ir::RegionStmt::kWarpgroupThreads;  // the producer
    if (buffered_.empty()) return out;
    realloc_ = true;
    return mutate_program(out);
  }

  ir::Stmt mutate_inst_stmt(const ir::Stmt& s, const ir::InstStmt& node) override {
    if (!realloc_ || node.results.size() != 1) return ir::IRMutator::mutate_inst_stmt(s, node);
    auto it = buffered_.find(node.results[0].get());
    if (it == buffered_.end()) return s;
    const auto& a = *node.inst->as<ir::AllocateSharedInst>();
    const ir::TensorType& t = *it->second->type.tensor;
    return inst_stmt(
        std::make_shared<ir::AllocateSharedInst>(a.dtype, std::vector<ir::Expr>{}, *t.layout, a.loc),
        {it->second});
  }

  ir::Block mutate_block(const ir::Block& block) override {
    if (realloc_) return ir::IRMutator::mutate_block(block);
    const bool top = &block == body_;
    body_ = nullptr;  // nested blocks are not the kernel's
    ir::Block out;
    // Where the statements after the warp-specialized loop begin in `out` (its barriers are before it), and
    // its two loops.
    std::optional<size_t> split_at;
    SpecializedLoops loops;
    SourceLoc ws_loc;
    for (const ir::Stmt& s : block) {
      const auto* f = s ? s->as<ir::ForStmt>() : nullptr;
      std::optional<Plan> plan = f && f->attrs.stages >= 2 ? plan_loop(*f) : std::nullopt;
      if (plan) {
        if (plan->form == Form::Specialized && leaves_early(f->body)) {
          // The consumers' release of a stage would be skipped, and the producer would wait for it forever.
          diags_.error(f->loc,
                       "warp_specialize=True: the loop's body has a break or continue, which would skip the "
                       "release of its stage to the producer");
          failed_ = true;
          return out;
        }
        if (plan->form == Form::Specialized && (!top || split_at)) {
          diags_.error(f->loc, "warp_specialize=True: {}",
                       top ? "a kernel has one warp-specialized loop"
                           : "the loop must be a statement of the kernel's "
                             "body (the regions split the whole kernel)");
          failed_ = true;
          plan->form = Form::Tma;  // (pipelined on, so that later loops are checked too)
        } else if (plan->form == Form::Specialized) {
          if (!pipeline(*f, *plan, out, &loops)) return out;  // reported (shared memory)
          split_at = out.size();
          ws_loc = f->loc;
          continue;
        }
        if (pipeline(*f, *plan, out)) continue;  // else reported (shared memory): kept as it is
      }
      if (ir::Stmt m = mutate_stmt(s)) out.push_back(std::move(m));
    }
    if (!split_at) return out;
    const auto split = static_cast<std::ptrdiff_t>(*split_at);
    ir::Block prefix(out.begin(), out.begin() + split), suffix(out.begin() + split, out.end());
    std::string why;
    std::optional<ir::Block> regions = split_warp_specialized(
        prefix, std::move(loops.producer), std::move(loops.consumer), suffix, threads_, ws_loc, &why);
    if (!regions) {
      diags_.error(ws_loc, "warp_specialize=True: cannot split the kernel into a producer and consumers: {}",
                   why);
      failed_ = true;
      return out;
    }
    specialized_ = true;
    return *regions;
  }

 private:
  // How a loop is pipelined: cp.async commit groups; the TMA with a barrier per stage (tma=True on Hopper,
  // where every tile is in a form the TMA writes); or, with warp_specialize=True too, the TMA form split
  // into a producer loop and a consumer loop (elsewhere the loop is pipelined as without it).
  enum class Form { CpAsync, Tma, Specialized };
  struct Plan {
    std::vector<const ir::InstStmt*> copies;  // the copies into the buffered tiles
    Form form = Form::CpAsync;
  };
  struct SpecializedLoops {
    ir::Block producer, consumer;
  };

  // The plan of a loop with stages=, or nullopt when it has nothing to pipeline (a step that is not a
  // positive constant, no copy to buffer).
  std::optional<Plan> plan_loop(const ir::ForStmt& f) const {
    const auto step = ir::as_const_int(f.step);
    if (!step || *step <= 0) return std::nullopt;
    Plan p{pipelinable_copies(f, uses_), Form::CpAsync};
    if (p.copies.empty()) return std::nullopt;
    if (f.attrs.tma && target_.features.hopper && tma_tiles(p.copies))
      p.form = f.attrs.warp_specialize ? Form::Specialized : Form::Tma;
    return p;
  }

  // Appends the pipelined form of `f` to `out`; false after reporting (its buffers do not fit). The
  // specialized form goes to `loops` (the producer's and the consumers' loop), and only its barriers to
  // `out`.
  bool pipeline(const ir::ForStmt& f, const Plan& plan, ir::Block& out, SpecializedLoops* loops = nullptr) {
    const std::vector<const ir::InstStmt*>& copies = plan.copies;
    const int64_t stages = f.attrs.stages;
    const SourceLoc loc = f.loc;

    // The buffered tensors: S tiles of the original's layout.
    std::map<const ir::VarNode*, ir::Var> buffers;
    for (const ir::InstStmt* is : copies) {
      const ir::Var& x = is->inst->as<ir::CopyInst>()->dst.tensor;
      ir::TensorType t = *x->type.tensor;
      layout::Index lead{stages};
      for (size_t d = 0; d < t.shape.size(); ++d) lead.push_back(1);
      t.layout = compose(layout::local(lead), *t.layout);
      t.shape.insert(t.shape.begin(), ir::make_int(stages));
      ir::Var nx = ir::make_var(x->name, ir::ValueType::tensor_of(std::move(t)), x->loc);
      buffers[x.get()] = nx;
      buffered_[x.get()] = nx;
    }

    // The buffers must fit in a block's shared memory (here, where the stages are known, rather than at the
    // planner's first allocation past the limit).
    int64_t total = 0;
    std::vector<std::string> parts;
    for (const ir::InstStmt* is : copies) {  // in program order, so the message is the same every run
      const ir::Var& nx = buffers.at(is->inst->as<ir::CopyInst>()->dst.tensor.get());
      const ir::TensorType& t = *nx->type.tensor;
      const int64_t bytes = t.layout->num_locals() * t.dtype.bits() / 8;
      total += bytes;
      parts.push_back(fmt::format("'{}' {} x {}", nx->name, stages, bytes / stages));
    }
    if (total > target::kMaxSharedPerBlock) {
      diags_.error(
          loc,
          "this pipeline's {} stages need {} bytes of shared memory ({}); a GPU block has at most {} ({} "
          "KiB): give fewer stages or smaller tiles",
          stages, total, fmt::join(parts, ", "), target::kMaxSharedPerBlock,
          target::kMaxSharedPerBlock / 1024);
      failed_ = true;
      for (const auto& [x, nx] : buffers) buffered_.erase(x);
      return false;
    }

    // The value of the loop variable at iteration index `i`, and the index of value `k`.
    auto value_at = [&](ir::Expr i) { return add(f.start, mul(std::move(i), f.step)); };
    const ir::Expr k = ir::make_var_ref(f.var);
    const ir::Expr index = div(sub(k, f.start), f.step);
    auto stage_of = [&](ir::Expr i) {
      return ir::make_binary(ir::BinaryOp::Mod, std::move(i), ir::make_int(stages));
    };

    // The TMA forms: one barrier per stage, armed with the stage's bytes, completed by the copies.
    const bool tma = plan.form != Form::CpAsync;
    ir::Var full;
    int64_t tx_bytes = 0;
    if (tma) {
      ir::TensorType bt{
          DataType::uint(64), Scope::Barrier, {ir::make_int(stages)}, layout::local({stages}), {}};
      full = ir::make_var(fmt::format("{}_full", f.var->name), ir::ValueType::tensor_of(std::move(bt)), loc);
      out.push_back(inst_stmt(
          std::make_shared<ir::AllocateBarrierInst>(1, std::vector<ir::Expr>{ir::make_int(stages)}, loc),
          {full}));
      for (const ir::InstStmt* is : copies) {
        const ir::TensorType& t = is->inst->as<ir::CopyInst>()->dst.type();
        tx_bytes += t.layout->num_locals() * t.dtype.bits() / 8;
      }
    }
    auto barrier = [&](ir::Expr stage) {
      return ir::TensorArg{full, {ir::Slice{ir::Slice::Kind::Index, std::move(stage)}}, loc};
    };

    // The copies of iteration index `i`, into stage `stage`.
    auto issue = [&](const ir::Expr& value, const ir::Expr& stage) {
      ir::Block b;
      if (tma)
        b.push_back(
            inst_stmt(std::make_shared<ir::BarrierArriveInst>(barrier(stage), ir::make_int(tx_bytes), loc)));
      for (const ir::InstStmt* is : copies) {
        const auto& c = *is->inst->as<ir::CopyInst>();
        const std::map<const ir::VarNode*, ir::Expr> at{{f.var.get(), value}};
        ir::TensorArg src = ir::rewrite(
            c.src, [&](const ir::Expr& e) { return substitute(e, at); }, [](const ir::Var& v) { return v; });
        ir::TensorArg dst{
            buffers.at(c.dst.tensor.get()), {ir::Slice{ir::Slice::Kind::Index, stage}}, c.dst.loc};
        if (tma)
          b.push_back(inst_stmt(std::make_shared<ir::CopyTmaInst>(dst, src, barrier(stage), c.loc)));
        else
          b.push_back(inst_stmt(std::make_shared<ir::CopyAsyncInst>(dst, src, c.loc)));
      }
      return b;
    };
    auto guarded = [&](ir::Expr cond, ir::Block body) {
      return std::make_shared<ir::IfStmt>(std::vector<ir::Expr>{std::move(cond)},
                                          std::vector<ir::Block>{std::move(body)}, ir::Block{}, false, loc);
    };
    auto commit = [&] { return inst_stmt(std::make_shared<ir::CopyAsyncCommitGroupInst>(loc)); };

    if (plan.form == Form::Specialized) {
      *loops = specialized_loop(f, out, copies, buffers, stage_of, issue, guarded, barrier);
      return true;
    }
    if (tma) {
      tma_loop(f, out, copies, buffers, index, value_at, stage_of, issue, guarded, barrier);
      return true;
    }

    // Prologue: iterations 0 .. S - 2, one commit group each (empty past the end, so the wait count holds).
    const ir::Var p =
        ir::make_var(fmt::format("{}_stage", f.var->name), ir::ValueType::scalar(DataType::i32()), loc);
    ir::Block prologue;
    prologue.push_back(guarded(ir::make_binary(ir::BinaryOp::Lt, value_at(ir::make_var_ref(p)), f.stop),
                               issue(value_at(ir::make_var_ref(p)), ir::make_var_ref(p))));
    prologue.push_back(commit());
    out.push_back(std::make_shared<ir::ForStmt>(p, ir::make_int(0), ir::make_int(stages - 1), ir::make_int(1),
                                                std::move(prologue), loc, ir::LoopAttrs{.unroll = 0}));

    // The Gemm that runs on wgmma asynchronously (async_gemm), if any.
    const ir::InstStmt* async = async_gemm(f, buffers);
    // The loop: wait for this iteration's group, one barrier, refill the stage of the iteration before.
    ir::Block body;
    body.push_back(inst_stmt(std::make_shared<ir::CopyAsyncWaitGroupInst>(ir::make_int(stages - 2), loc)));
    body.push_back(inst_stmt(std::make_shared<ir::SynchronizeInst>(loc)));
    const ir::Expr ahead = add(index, ir::make_int(stages - 1));
    auto refill = [&] {
      body.push_back(guarded(ir::make_binary(ir::BinaryOp::Lt, value_at(ahead), f.stop),
                             issue(value_at(ahead), stage_of(ahead))));
      body.push_back(commit());
    };
    if (!async) refill();
    // The rest of the body reads this iteration's stage; the previous step's stage is refilled once its
    // asynchronous product has retired.
    staged_body(f, copies, buffers, stage_of(index), async, body, refill);
    out.push_back(std::make_shared<ir::ForStmt>(f.var, f.start, f.stop, f.step, std::move(body), loc,
                                                ir::LoopAttrs{.unroll = f.attrs.unroll, .stages = 1}));
    if (async) out.push_back(inst_stmt(std::make_shared<ir::DotAsyncWaitInst>(0, loc)));
    out.push_back(inst_stmt(std::make_shared<ir::CopyAsyncWaitGroupInst>(ir::make_int(0), loc)));
    return true;
  }

  // The warp-specialized TMA form (warp_specialize.h splits the kernel around it): the producer's loop
  // waits until the consumers have released a stage (empty, parity 1 before the first phase: every stage
  // is free at the start), arms full and issues the copies; the consumers' loop waits for full, runs the
  // body on the stage and releases it: at once, or with an asynchronous Gemm after the wait that retires
  // the previous step's product, that step's stage.
  template <typename StageOf, typename Issue, typename Guarded, typename Barrier>
  SpecializedLoops specialized_loop(const ir::ForStmt& f, ir::Block& out,
                                    const std::vector<const ir::InstStmt*>& copies,
                                    const std::map<const ir::VarNode*, ir::Var>& buffers, StageOf stage_of,
                                    Issue issue, Guarded guarded, Barrier full) {
    const int64_t stages = f.attrs.stages;
    const SourceLoc loc = f.loc;
    ir::TensorType bt{
        DataType::uint(64), Scope::Barrier, {ir::make_int(stages)}, layout::local({stages}), {}};
    const ir::Var empty_var =
        ir::make_var(fmt::format("{}_empty", f.var->name), ir::ValueType::tensor_of(std::move(bt)), loc);
    out.push_back(inst_stmt(
        std::make_shared<ir::AllocateBarrierInst>(1, std::vector<ir::Expr>{ir::make_int(stages)}, loc),
        {empty_var}));
    auto empty = [&](ir::Expr stage) {
      return ir::TensorArg{empty_var, {ir::Slice{ir::Slice::Kind::Index, std::move(stage)}}, loc};
    };
    auto index_of = [&](const ir::Var& v) { return div(sub(ir::make_var_ref(v), f.start), f.step); };
    auto phase = [&](const ir::Expr& i, int64_t plus) {
      return ir::make_binary(ir::BinaryOp::Mod, add(div(i, ir::make_int(stages)), ir::make_int(plus)),
                             ir::make_int(2));
    };
    const ir::LoopAttrs plain{.unroll = f.attrs.unroll, .stages = 1};

    // The producer: its own loop variable (a region's names are its own).
    const ir::Var pk = ir::make_var(f.var->name, f.var->type, f.var->loc);
    const ir::Expr pi = index_of(pk);
    ir::Block produce;
    produce.push_back(
        inst_stmt(std::make_shared<ir::BarrierWaitInst>(empty(stage_of(pi)), phase(pi, 1), loc)));
    for (ir::Stmt& s : issue(ir::make_var_ref(pk), stage_of(pi))) produce.push_back(std::move(s));
    SpecializedLoops loops;
    loops.producer.push_back(
        std::make_shared<ir::ForStmt>(pk, f.start, f.stop, f.step, std::move(produce), loc, plain));

    // The consumers.
    const ir::Expr index = index_of(f.var);
    const ir::InstStmt* async = async_gemm(f, buffers);
    ir::Block body;
    body.push_back(
        inst_stmt(std::make_shared<ir::BarrierWaitInst>(full(stage_of(index)), phase(index, 0), loc)));
    auto release = [&](const ir::Expr& i) {
      return inst_stmt(std::make_shared<ir::BarrierArriveInst>(empty(stage_of(i)), nullptr, loc));
    };
    staged_body(
        f, copies, buffers, stage_of(index), async, body,
        [&] {
          body.push_back(guarded(ir::make_binary(ir::BinaryOp::Gt, index, ir::make_int(0)),
                                 ir::Block{release(sub(index, ir::make_int(1)))}));
        },
        /*synchronize_after_wait=*/false);
    if (!async) body.push_back(release(index));
    loops.consumer.push_back(
        std::make_shared<ir::ForStmt>(f.var, f.start, f.stop, f.step, std::move(body), loc, plain));
    if (async) loops.consumer.push_back(inst_stmt(std::make_shared<ir::DotAsyncWaitInst>(0, loc)));
    return loops;
  }

  // The TMA form: all S stages in flight from the start; iteration k waits for its stage's barrier (phase
  // k / S), and a stage is refilled once every thread is done with it: after the body (its Synchronize), or,
  // with an asynchronous Gemm, after the wait that retires the previous step's product, for that step's
  // stage.
  template <typename ValueAt, typename StageOf, typename Issue, typename Guarded, typename Barrier>
  void tma_loop(const ir::ForStmt& f, ir::Block& out, const std::vector<const ir::InstStmt*>& copies,
                const std::map<const ir::VarNode*, ir::Var>& buffers, const ir::Expr& index, ValueAt value_at,
                StageOf stage_of, Issue issue, Guarded guarded, Barrier barrier) {
    const int64_t stages = f.attrs.stages;
    const SourceLoc loc = f.loc;
    const ir::Var p =
        ir::make_var(fmt::format("{}_stage", f.var->name), ir::ValueType::scalar(DataType::i32()), loc);
    ir::Block prologue;
    prologue.push_back(guarded(ir::make_binary(ir::BinaryOp::Lt, value_at(ir::make_var_ref(p)), f.stop),
                               issue(value_at(ir::make_var_ref(p)), ir::make_var_ref(p))));
    out.push_back(std::make_shared<ir::ForStmt>(p, ir::make_int(0), ir::make_int(stages), ir::make_int(1),
                                                std::move(prologue), loc, ir::LoopAttrs{.unroll = 0}));
    const ir::InstStmt* async = async_gemm(f, buffers);
    ir::Block body;
    const ir::Expr parity =
        ir::make_binary(ir::BinaryOp::Mod, div(index, ir::make_int(stages)), ir::make_int(2));
    body.push_back(inst_stmt(std::make_shared<ir::BarrierWaitInst>(barrier(stage_of(index)), parity, loc)));
    // Refill the stage of iteration index i with iteration i + S.
    auto refill = [&](const ir::Expr& i, ir::Expr extra) {
      ir::Expr cond = ir::make_binary(ir::BinaryOp::Lt, value_at(add(i, ir::make_int(stages))), f.stop);
      if (extra) cond = ir::make_binary(ir::BinaryOp::And, std::move(extra), std::move(cond));
      body.push_back(guarded(std::move(cond), issue(value_at(add(i, ir::make_int(stages))), stage_of(i))));
    };
    const ir::Expr previous = sub(index, ir::make_int(1));
    staged_body(f, copies, buffers, stage_of(index), async, body,
                [&] { refill(previous, ir::make_binary(ir::BinaryOp::Gt, index, ir::make_int(0))); });
    if (!async) {
      body.push_back(inst_stmt(std::make_shared<ir::SynchronizeInst>(loc)));
      refill(index, nullptr);
    }
    out.push_back(std::make_shared<ir::ForStmt>(f.var, f.start, f.stop, f.step, std::move(body), loc,
                                                ir::LoopAttrs{.unroll = f.attrs.unroll, .stages = 1}));
    if (async) out.push_back(inst_stmt(std::make_shared<ir::DotAsyncWaitInst>(0, loc)));
  }

  // Appends the loop body without its pipelined copies, on stage `here`, to `body`. The asynchronous Gemm
  // (if any) becomes DotAsync + DotAsyncWait(1) + Synchronize(): the tensor cores work on this step while the
  // previous one's product retires, and once every warpgroup has retired it (the barrier) `after_async`
  // refills that step's stage.
  static void staged_body(const ir::ForStmt& f, const std::vector<const ir::InstStmt*>& copies,
                          const std::map<const ir::VarNode*, ir::Var>& buffers, const ir::Expr& here,
                          const ir::InstStmt* async, ir::Block& body,
                          const std::function<void()>& after_async, bool synchronize_after_wait = true) {
    const std::set<const ir::InstStmt*> moved(copies.begin(), copies.end());
    const std::set<const ir::InstStmt*> in_registers =
        async ? std::set<const ir::InstStmt*>{} : register_gemms(f, buffers);
    std::vector<const ir::VarNode*> in_flight;  // the fragment of each DotAsync not yet retired, in order
    for (const ir::Stmt& s : f.body) {
      const auto* is = s ? s->as<ir::InstStmt>() : nullptr;
      if (is && moved.count(is)) continue;
      if (is && in_registers.count(is)) {
        const ir::Stmt restaged = restage(s, buffers, here);
        const auto* g = restaged->as<ir::InstStmt>()->inst->as<ir::GemmInst>();
        body.push_back(inst_stmt(
            std::make_shared<ir::DotAsyncInst>(g->a, g->b, g->c, g->transpose_a, g->transpose_b, g->loc)));
        in_flight.push_back(g->a.tensor.get());
        continue;
      }
      if (!in_registers.empty()) retire_before_writes(s, in_flight, body);
      if (s.get() != async) {
        body.push_back(restage(s, buffers, here));
        continue;
      }
      const auto& g = *async->inst->as<ir::GemmInst>();
      const ir::Stmt restaged = restage(s, buffers, here);
      const auto* staged = restaged->as<ir::InstStmt>()->inst->as<ir::GemmInst>();
      body.push_back(inst_stmt(std::make_shared<ir::DotAsyncInst>(staged->a, staged->b, staged->c,
                                                                  g.transpose_a, g.transpose_b, g.loc)));
      body.push_back(inst_stmt(std::make_shared<ir::DotAsyncWaitInst>(1, g.loc)));
      // (A region's BarrierArrive waits for all of its threads itself.)
      if (synchronize_after_wait) body.push_back(inst_stmt(std::make_shared<ir::SynchronizeInst>(g.loc)));
      after_async();
    }
    // The register-A products retire within their step (the code generator keeps none of the RS form in
    // flight across the loop's back edge): the stage they read is then released as after a plain body.
    if (!in_flight.empty()) body.push_back(inst_stmt(std::make_shared<ir::DotAsyncWaitInst>(0, f.loc)));
  }

  // The Gemms of the loop body whose a is a fragment (not a buffered tile) and whose b is a buffered tile,
  // all chosen for wgmma (infer_layouts: the register-A form) and two or more, into one accumulator that
  // nothing else in the body names. They run as DotAsync, so that the conversion of one group of the step's
  // weights overlaps the product of the group before (the quantized matmul's _wsr step, written as tile
  // operators). Empty when any Gemm of the body is of another kind: then each is synchronous. The code
  // generator emits the RS form only with straight-line instructions between a product and its retirement
  // (emit_wgmma.cpp), so from the first such Gemm to the step's end the body may hold only Gemms and
  // statements that lower to straight-line code (straight_line); and at most 8 Gemms, so that a wait's
  // count stays within DotAsyncWait's 0..7.
  static std::set<const ir::InstStmt*> register_gemms(const ir::ForStmt& f,
                                                      const std::map<const ir::VarNode*, ir::Var>& buffers) {
    std::vector<const ir::InstStmt*> found;
    const ir::VarNode* acc = nullptr;
    for (const ir::Stmt& s : f.body) {
      const auto* is = s ? s->as<ir::InstStmt>() : nullptr;
      const auto* g = is ? is->inst->as<ir::GemmInst>() : nullptr;
      if (!g) {
        if (!found.empty() && !straight_line(s)) return {};
        continue;
      }
      if (!g->wgmma.value_or(false) || !buffers.count(g->b.tensor.get()) ||
          buffers.count(g->a.tensor.get()) || g->a.type().scope != Scope::Register ||
          (acc && acc != g->c.tensor.get()))
        return {};
      acc = g->c.tensor.get();
      found.push_back(is);
    }
    if (found.size() < 2 || found.size() > 8) return {};
    Accesses inside;
    inside.visit_block(f.body);
    if (inside.uses[acc] != static_cast<int>(found.size())) return {};
    return {found.begin(), found.end()};
  }

  // Whether `s` lowers to straight-line code without a global access (a LoadGlobal waits): a Parallel loop
  // into fragments over fragments and shared tiles, or the Fill of a fragment.
  static bool straight_line(const ir::Stmt& s) {
    auto local = [](const ir::Var& v) {
      const ir::Scope scope = v->type.tensor->scope;
      return scope == Scope::Register || scope == Scope::Shared;
    };
    if (const auto* p = s ? s->as<ir::ParallelStmt>() : nullptr) {
      for (const ir::ElementAssign& a : p->body) {
        if (a.target.tensor->type.tensor->scope != Scope::Register) return false;
        bool ok = true;
        ir::for_each_access(a.value, [&](const ir::ElementAccess& e) { ok = ok && local(e.tensor); });
        if (!ok) return false;
      }
      return true;
    }
    const auto* is = s ? s->as<ir::InstStmt>() : nullptr;
    const auto* fill = is ? is->inst->as<ir::FillInst>() : nullptr;
    return fill && fill->dst.type().scope == Scope::Register;
  }

  // Before a statement that writes a fragment that a DotAsync in flight reads (its registers are wgmma's
  // operand until the product retires): the wait that retires that product and those issued before it.
  static void retire_before_writes(const ir::Stmt& s, std::vector<const ir::VarNode*>& in_flight,
                                   ir::Block& body) {
    Accesses a;
    a.visit_block(ir::Block{s});
    size_t last = in_flight.size();
    for (size_t i = 0; i < in_flight.size(); ++i)
      if (a.writes.count(in_flight[i])) last = i;
    if (last == in_flight.size()) return;
    const int64_t younger = static_cast<int64_t>(in_flight.size() - 1 - last);
    body.push_back(inst_stmt(std::make_shared<ir::DotAsyncWaitInst>(younger, s->loc)));
    in_flight.erase(in_flight.begin(), in_flight.begin() + static_cast<std::ptrdiff_t>(last + 1));
  }

  // Every pipelined tile is one the TMA writes: rank 2, in the tile layer's swizzled layout with rows of 32,
  // 64 or 128 bytes (the TMA's swizzle modes), from a rank-2 global view.
  // A tile of a global view with a layout (tiles in that order) stored in the same order goes as one bulk
  // copy of its bytes (CopyTma's other form), whatever its element type; so does a row-major tile of one
  // row.
  static bool tma_tiles(const std::vector<const ir::InstStmt*>& copies) {
    for (const ir::InstStmt* is : copies) {
      const auto& c = *is->inst->as<ir::CopyInst>();
      const ir::TensorType& t = c.dst.type();
      const ir::TensorType& g = c.src.type();
      if (g.layout && t.layout && *t.layout == *g.layout && c.src.tensor->type.tensor->rank() == t.rank() &&
          t.layout->num_locals() * t.dtype.bits() % 128 == 0)
        continue;
      auto shape = t.static_shape();
      if (!shape || c.src.type().rank() != 2) return false;
      // One row stored row-major (a step's scales or bias): the TMA without a swizzle, rows up to 256
      // elements.
      const bool row = (*shape)[0] == 1 && *t.layout == layout::local(*shape);
      if (!tma_tile(*shape, t.dtype, *t.layout, /*swizzled=*/!row)) return false;
    }
    return true;
  }

  // The Gemm statement of the loop body that can run as DotAsync: infer_layouts chose wgmma for it (wgmma=),
  // both operands are buffered tiles of this pipeline, and nothing else in
  // the body names the accumulator (it is in flight until the next step's wait). Null when there is none.
  const ir::InstStmt* async_gemm(const ir::ForStmt& f,
                                 const std::map<const ir::VarNode*, ir::Var>& buffers) const {
    const ir::InstStmt* found = nullptr;
    for (const ir::Stmt& s : f.body) {
      const auto* is = s ? s->as<ir::InstStmt>() : nullptr;
      const auto* g = is ? is->inst->as<ir::GemmInst>() : nullptr;
      if (!g || !buffers.count(g->a.tensor.get()) || !buffers.count(g->b.tensor.get())) continue;
      if (!g->wgmma.value_or(false)) continue;
      if (found) return nullptr;  // two: keep it simple, both synchronous
      found = is;
    }
    if (!found) return nullptr;
    Accesses inside;
    inside.visit_block(f.body);
    return inside.uses[found->inst->as<ir::GemmInst>()->c.tensor.get()] == 1 ? found : nullptr;
  }

  // `s` with every operand naming a buffered tensor x turned into x'[stage].
  static ir::Stmt restage(const ir::Stmt& s, const std::map<const ir::VarNode*, ir::Var>& buffers,
                          const ir::Expr& stage) {
    struct Restage : ir::IRMutator {
      const std::map<const ir::VarNode*, ir::Var>* buffers;
      ir::Expr stage;
      ir::Inst mutate_inst(const ir::Inst& inst) override {
        // Each TensorArg of the instruction: rebuilt through its args so that a view gains the stage index.
        ir::InstArgs args = ir::inst_args(*inst);
        bool changed = false;
        for (size_t i = 0; i < args.size(); ++i) {
          ir::ArgValue& a = args.at(i);
          if (!a.present) continue;
          auto fix = [&](ir::TensorArg& t) {
            auto it = buffers->find(t.tensor.get());
            if (it == buffers->end()) return;
            t.tensor = it->second;
            t.slices.insert(t.slices.begin(), ir::Slice{ir::Slice::Kind::Index, stage});
            changed = true;
          };
          if (a.tensor.tensor) fix(a.tensor);
          if (a.operand.tensor) fix(*a.operand.tensor);
        }
        return changed ? args.def().build(args, inst->loc) : inst;
      }
      // A Parallel body's element x[i, j] of a buffered x becomes x'[stage, i, j].
      ir::Stmt mutate_parallel(const ir::Stmt& s, const ir::ParallelStmt& node) override {
        bool changed = false;
        auto fix = [&](ir::ElementAccess a) {
          auto it = buffers->find(a.tensor.get());
          if (it == buffers->end()) return a;
          a.tensor = it->second;
          a.index.insert(a.index.begin(), stage);
          changed = true;
          return a;
        };
        std::function<ir::ElementExpr(const ir::ElementExpr&)> value = [&](const ir::ElementExpr& e) {
          if (e->kind == ir::ElementExprNode::Kind::Access) return ir::make_element_access(fix(e->access));
          if (e->kind == ir::ElementExprNode::Kind::Scalar) return e;
          std::vector<ir::ElementExpr> args;
          for (const ir::ElementExpr& a : e->args) args.push_back(value(a));
          return ir::make_element_op(e->op, std::move(args), e->loc);
        };
        std::vector<ir::ElementAssign> body;
        for (const ir::ElementAssign& a : node.body) body.push_back({fix(a.target), value(a.value), a.loc});
        if (!changed) return s;
        return std::make_shared<ir::ParallelStmt>(node.vars, node.extents, std::move(body), node.loc);
      }
    } r;
    r.buffers = &buffers;
    r.stage = stage;
    return r.mutate_stmt(s);
  }

  std::map<const ir::VarNode*, int> uses_;
  const target::Target& target_;
  Diagnostics& diags_;
  bool failed_ = false;
  std::map<const ir::VarNode*, ir::Var> buffered_;
  bool realloc_ = false;
  // Warp specialization: the kernel's body, its threads, the two loops of the specialized pipeline, and
  // whether the kernel was split.
  const ir::Block* body_ = nullptr;
  int64_t threads_ = 0;
  bool specialized_ = false;
};

}  // namespace

std::optional<ir::Program> pipeline_loops(ir::Program program, Diagnostics& diags,
                                          const target::Target& target) {
  Accesses all;
  all.visit_program(program);
  Pipeline pipeline(std::move(all.uses), target, diags);
  ir::Program out = pipeline.run(program);
  if (pipeline.failed()) return std::nullopt;
  return out;
}

}  // namespace tilevm::tile
