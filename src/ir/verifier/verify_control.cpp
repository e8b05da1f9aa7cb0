// Statements: definitions before uses (definite assignment through branches and loops), FreeShared
// lifetimes, conditions, loops, break/continue, and the dispatch of each instruction with its results.
#include <fmt/format.h>

#include "tilevm/ir/inst_types.h"
#include "verifier_impl.h"

namespace tilevm::ir::verifier_detail {

namespace {

std::string at(SourceLoc loc) {
  return loc.known() ? fmt::format(" at {}:{}", loc.line, loc.col) : "";
}

}  // namespace

void Verifier::use_var(const Var& v, SourceLoc loc) {
  if (!v) return;
  if (!region_of_.empty() || region_) {
    if (!check_region_use(v, loc)) {
      state_.defined.insert(v.get());  // one report per path
      return;
    }
  }
  if (!state_.defined.count(v.get())) {
    if (const VarNode* before = loop_rebound(*v)) {
      diags_.error(
          loc,
          "'{}' may be undefined here: the '{}' defined{} is a new tensor, made inside a loop that may "
          "not run; to update the '{}' defined{} in the loop instead, write {}(..., out={})",
          v->name, v->name, at(v->loc), v->name, at(before->loc), loop_results_.at(v.get())->name(), v->name);
    } else if (ever_defined_.count(v.get())) {
      diags_.error(loc,
                   "'{}' may be undefined here: it is defined{} inside a branch or loop that may not run",
                   v->name, at(v->loc));
    } else {
      diags_.error(loc, "'{}' is used before it is defined", v->name);
    }
    state_.defined.insert(v.get());  // one report per path
  }
  auto f = state_.freed.find(v.get());
  if (f != state_.freed.end()) diags_.error(loc, "'{}' is used after FreeShared{}", v->name, at(f->second));
}

// `acc = Add(acc, x)` in a loop defines a new tensor named acc rather than updating the acc defined before
// the loop. When `v` is such a loop result and a tensor of its name is defined here, returns that tensor
// (the latest), so that the message can say how to write the update.
const VarNode* Verifier::loop_rebound(const VarNode& v) const {
  if (!loop_results_.count(&v)) return nullptr;
  const VarNode* before = nullptr;
  for (const VarNode* d : state_.defined)
    if (d->name == v.name && d->type.is_tensor() && (!before || before->loc.line < d->loc.line)) before = d;
  return before;
}

void Verifier::define_var(const Var& v) {
  if (!v) return;
  state_.defined.insert(v.get());
  ever_defined_.insert(v.get());
  state_.freed.erase(v.get());
  if (region_) region_of_[v.get()] = region_;
}

void Verifier::check_block(const Block& block) {
  check_sections(block);
  for (const Stmt& s : block) {
    if (!s) continue;
    check_stmt(s);
  }
}

void Verifier::check_stmt(const Stmt& s) {
  if (region_) check_in_region(s);
  switch (s->kind) {
    case StmtKind::Assign: {
      const auto& a = *s->as<AssignStmt>();
      auto t = check_expr(a.value, s->loc);
      if (!a.var) {
        diags_.error(s->loc, "an assignment has no variable");
        return;
      }
      // An update writes the variable without reading it (it may first run where the definition did not).
      if (!a.var->type.is_scalar()) {
        diags_.error(s->loc, "'{}' is {}; only scalars are assigned with '='", a.var->name,
                     type_text(a.var->type));
      } else if (t && t->is_bool() != a.var->type.dtype.is_bool()) {
        diags_.error(pick(a.value ? a.value->loc : SourceLoc{}, s->loc), "'{}' is {} but the value is {}",
                     a.var->name, a.var->type.dtype.name(), t->name());
      }
      define_var(a.var);
      return;
    }
    case StmtKind::Inst: {
      const auto& is = *s->as<InstStmt>();
      if (!is.inst) {
        diags_.error(s->loc, "a statement has no instruction");
        return;
      }
      const InstNode& inst = *is.inst;
      result_.reset();
      current_ = &is;
      // A fragment reaches only tile operators until the tile layer gives it a layout.
      const bool laid_out = takes_fragments(inst.kind) || check_fragments_laid_out(inst, diags_);
      if (laid_out) switch (inst.kind) {
          case InstKind::BlockIndices:
          case InstKind::Synchronize:
          case InstKind::CopyAsyncCommitGroup:
            break;
          case InstKind::Exit:
            break;
          case InstKind::Print:
            check_print(*inst.as<PrintInst>());
            break;
          case InstKind::ViewGlobal:
            check_view_global(*inst.as<ViewGlobalInst>());
            break;
          case InstKind::AllocateGlobal:
            check_allocate_global(*inst.as<AllocateGlobalInst>());
            break;
          case InstKind::LoadGlobal:
          case InstKind::LoadShared:
            check_load(static_cast<const LoadInst&>(inst));
            break;
          case InstKind::StoreGlobal:
          case InstKind::AtomicAddGlobal:
          case InstKind::StoreShared:
            check_store(static_cast<const StoreInst&>(inst));
            break;
          case InstKind::TakeTicket:
            check_take_ticket(*inst.as<TakeTicketInst>());
            break;
          case InstKind::AllocateShared:
            check_allocate_shared(*inst.as<AllocateSharedInst>());
            break;
          case InstKind::FreeShared:
            check_free_shared(*inst.as<FreeSharedInst>());
            break;
          case InstKind::CopyAsync:
            check_copy_async(*inst.as<CopyAsyncInst>());
            break;
          case InstKind::CopyAsyncWaitGroup:
            check_wait_group(*inst.as<CopyAsyncWaitGroupInst>());
            break;
          case InstKind::AllocateBarrier:
            check_allocate_barrier(*inst.as<AllocateBarrierInst>());
            break;
          case InstKind::BarrierArrive:
            check_barrier_arrive(*inst.as<BarrierArriveInst>());
            break;
          case InstKind::BarrierWait:
            check_barrier_wait(*inst.as<BarrierWaitInst>());
            break;
          case InstKind::CopyTma:
            check_copy_tma(*inst.as<CopyTmaInst>());
            break;
          case InstKind::StoreTma:
            check_store_tma(*inst.as<StoreTmaInst>());
            break;
          case InstKind::StoreTmaWait:
            check_store_tma_wait(*inst.as<StoreTmaWaitInst>());
            break;
          case InstKind::ClusterSync:
            check_cluster_use(inst, "ClusterSync()");
            break;
          case InstKind::AllocateRegister:
            check_allocate_register(*inst.as<AllocateRegisterInst>());
            break;
          case InstKind::Iota:
            check_iota(*inst.as<IotaInst>());
            break;
          case InstKind::Cast:
            check_cast(*inst.as<CastInst>());
            break;
          case InstKind::View:
            check_view(*inst.as<ViewInst>());
            break;
          case InstKind::Elementwise:
            check_elementwise(*inst.as<ElementwiseInst>());
            break;
          case InstKind::Reduce:
            check_reduce(*inst.as<ReduceInst>());
            break;
          case InstKind::Dot:
            check_dot(*inst.as<DotInst>());
            break;
          case InstKind::DotAsync:
            check_dot_async(*inst.as<DotAsyncInst>());
            break;
          case InstKind::DotAsyncWait:
            check_dot_async_wait(*inst.as<DotAsyncWaitInst>());
            break;
          case InstKind::AllocateFragment:
            check_allocate_fragment(*inst.as<AllocateFragmentInst>());
            break;
          case InstKind::Copy:
            check_copy(*inst.as<CopyInst>());
            break;
          case InstKind::Gemm:
            check_gemm(*inst.as<GemmInst>());
            break;
          case InstKind::Fill:
            check_fill(*inst.as<FillInst>());
            break;
          case InstKind::AtomicAdd:
            check_atomic_add(*inst.as<AtomicAddInst>());
            break;
          case InstKind::Rasterize:
            check_rasterize(*inst.as<RasterizeInst>());
            break;
        }

      // The names that receive the results.
      const int grid_rank = static_cast<int>(program_.grid.size());
      const int expected = inst.def().result_count(grid_rank);
      const int got = static_cast<int>(is.results.size());
      if (const Var out = out_operand(inst); out && got > 0) {
        diags_.error(s->loc, "{} writes into '{}' (out=) and cannot also be assigned to a name", inst.name(),
                     out->name);
      } else if (got > 0 && got != expected) {
        if (inst.kind == InstKind::BlockIndices)
          diags_.error(s->loc,
                       "BlockIndices gives {} values (one per grid dimension) but {} names receive them",
                       expected, got);
        else
          diags_.error(s->loc, "{} gives {} value{} but {} names receive {}", inst.name(), expected,
                       expected == 1 ? "" : "s", got, expected == 1 ? "it" : "them");
      } else if (got == 1 && result_) {
        const Var& r = is.results[0];
        const TensorType* t = tensor_type_of(r);
        if (r && (!t || t->scope != Scope::Register || !t->layout || t->dtype != result_->dtype ||
                  !(*t->layout == result_->layout)))
          diags_.error(s->loc, "'{}' is declared {} but {} gives register {} with layout {}", r->name,
                       type_text(r->type), inst.name(), result_->dtype.name(), layout_text(result_->layout));
      } else if (got == 1 && inst.kind == InstKind::TakeTicket) {
        const Var& r = is.results[0];
        if (r && !(r->type.is_scalar() && r->type.dtype.is_integer()))
          diags_.error(s->loc, "'{}' is declared {} but TakeTicket gives i32", r->name, type_text(r->type));
      } else if (got > 0 && (inst.kind == InstKind::BlockIndices || inst.kind == InstKind::ViewGlobal ||
                             inst.kind == InstKind::AllocateGlobal || inst.kind == InstKind::AllocateShared ||
                             inst.kind == InstKind::AllocateBarrier)) {
        for (const Var& r : is.results) {
          if (!r) continue;
          if (inst.kind == InstKind::BlockIndices && !(r->type.is_scalar() && r->type.dtype.is_integer()))
            diags_.error(s->loc, "'{}' is declared {} but BlockIndices gives i32", r->name,
                         type_text(r->type));
          const TensorType* t = tensor_type_of(r);
          const Scope want = inst.kind == InstKind::AllocateShared    ? Scope::Shared
                             : inst.kind == InstKind::AllocateBarrier ? Scope::Barrier
                                                                      : Scope::Global;
          if (inst.kind != InstKind::BlockIndices && (!t || t->scope != want))
            diags_.error(s->loc, "'{}' is declared {} but {} gives a {} tensor", r->name, type_text(r->type),
                         inst.name(), to_string(want));
        }
      }
      for (const Var& r : is.results) {
        define_var(r);
        if (r && !loops_.empty()) {
          const TensorType* t = tensor_type_of(r);
          const InstDef* def = find_inst_def(inst.name());
          if (t && t->scope == Scope::Register && def && def->param_index("out") >= 0)
            loop_results_[r.get()] = &inst;
        }
        if (r && inst.kind == InstKind::AllocateShared)
          loop_of_[r.get()] = loops_.empty() ? 0 : loops_.back();
        if (r && inst.kind == InstKind::ViewGlobal) global_views_[r.get()] = inst.as<ViewGlobalInst>();
      }
      if (inst.kind == InstKind::Exit) state_.unreachable = true;
      current_ = nullptr;
      return;
    }
    case StmtKind::If: {
      const auto& n = *s->as<IfStmt>();
      if (n.conditions.size() != n.bodies.size() || n.conditions.empty()) {
        diags_.error(s->loc, "an if statement has {} conditions and {} bodies", n.conditions.size(),
                     n.bodies.size());
        return;
      }
      const FlowState before = state_;
      std::vector<FlowState> outs;
      for (size_t k = 0; k < n.conditions.size(); ++k) {
        state_ = before;
        check_bool_expr(n.conditions[k], s->loc, k == 0 ? "the if condition" : "the elif condition");
        check_block(n.bodies[k]);
        outs.push_back(state_);
      }
      state_ = before;
      if (n.has_else || !n.else_body.empty()) check_block(n.else_body);
      outs.push_back(state_);
      // Defined after the if: defined at the end of every branch that falls through.
      FlowState merged;
      merged.unreachable = true;
      bool first = true;
      for (const FlowState& o : outs) {
        for (const auto& [v, loc] : o.freed) merged.freed.emplace(v, loc);
        if (o.unreachable) continue;
        merged.unreachable = false;
        if (first) {
          merged.defined = o.defined;
          first = false;
        } else {
          std::set<const VarNode*> both;
          for (const VarNode* v : merged.defined)
            if (o.defined.count(v)) both.insert(v);
          merged.defined = std::move(both);
        }
      }
      if (first) merged.defined = before.defined;
      state_ = std::move(merged);
      return;
    }
    case StmtKind::For: {
      const auto& n = *s->as<ForStmt>();
      check_int_expr(n.start, s->loc, "the range start");
      check_int_expr(n.stop, s->loc, "the range stop");
      check_int_expr(n.step, s->loc, "the range step");
      if (auto step = as_const_int(n.step); step && *step == 0)
        diags_.error(pick(n.step->loc, s->loc), "the range step must not be 0");
      if (n.attrs.unroll < 0) diags_.error(s->loc, "unroll={} must not be negative", n.attrs.unroll);
      if (n.attrs.stages < 1) diags_.error(s->loc, "stages={} must be at least 1", n.attrs.stages);
      if (n.attrs.warp_specialize && (!n.attrs.tma || n.attrs.stages < 2))
        diags_.error(
            s->loc,
            "warp_specialize=True needs a pipeline of TMA copies (stages= of at least 2 and tma=True): "
            "its producer warpgroup issues them");
      if (!n.var) {
        diags_.error(s->loc, "a for loop has no variable");
      } else if (!n.var->type.is_scalar() || !n.var->type.dtype.is_integer()) {
        diags_.error(s->loc, "the loop variable '{}' is {}; it must be an integer", n.var->name,
                     type_text(n.var->type));
      }
      const FlowState before = state_;
      define_var(n.var);
      check_loop_body(n.body, before);
      return;
    }
    case StmtKind::While: {
      const auto& n = *s->as<WhileStmt>();
      check_bool_expr(n.condition, s->loc, "the while condition");
      // A copy: check_loop_body changes state_ while it checks the body.
      const FlowState before = state_;
      check_loop_body(n.body, before);
      return;
    }
    case StmtKind::Break:
    case StmtKind::Continue:
      if (loops_.empty())
        diags_.error(s->loc, "'{}' outside a loop", s->kind == StmtKind::Break ? "break" : "continue");
      state_.unreachable = true;
      return;
    case StmtKind::Return:
      state_.unreachable = true;
      return;
    case StmtKind::Region:
      check_region(*s->as<RegionStmt>());
      return;
    case StmtKind::Parallel:
      check_parallel(*s->as<ParallelStmt>());
      return;
  }
}

// A loop body runs zero or more times: after the loop the flow state is the one before it, except that
// what the body freed stays freed.
void Verifier::check_loop_body(const Block& body, const FlowState& before) {
  loops_.push_back(next_loop_id_++);
  check_block(body);
  loops_.pop_back();
  FlowState after = before;
  for (const auto& [v, loc] : state_.freed) after.freed.emplace(v, loc);
  state_ = std::move(after);
}

}  // namespace tilevm::ir::verifier_detail
