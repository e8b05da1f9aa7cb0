// The statement executor: the grid loop, control flow, variable bindings and instruction dispatch; and
// run_program, the public entry point.
#include <fmt/format.h>

#include "machine.h"
#include "tilevm/support/error.h"
#include "tilevm/support/file_io.h"
#include "tilevm/support/int_math.h"
#include "tilevm/target/limits.h"
#include "tilevm/type/convert.h"

namespace tilevm::interp {

namespace detail {

Machine::Machine(const ir::Program& program, Arguments& args, const RunOptions& options,
                 const Schedule& schedule)
    : program_(program), args_(args), options_(options), schedule_(schedule), rng_state_(schedule.seed) {
  for (const ir::Var& p : program.params) {
    Value v;
    if (p->type.is_pointer()) {
      auto it = args.buffers.find(p->name);
      if (it == args.buffers.end() || it->second == nullptr) {
        raise(p->loc, "no buffer was given for the pointer parameter '{}'", p->name);
      }
      auto buf = std::make_unique<GlobalBuffer>();
      buf->name = p->name;
      buf->data = it->second->data();
      buf->bytes = static_cast<int64_t>(it->second->size());
      v.kind = Value::Kind::Pointer;
      v.pointer = buf.get();
      param_buffers_.push_back(std::move(buf));
    } else {
      auto it = args.scalars.find(p->name);
      if (it == args.scalars.end())
        raise(p->loc, "no value was given for the scalar parameter '{}'", p->name);
      v.kind = Value::Kind::Scalar;
      v.scalar = convert_scalar(it->second, p->type.dtype);
    }
    params_[p.get()] = std::move(v);
  }
  mark_written_buffers();
  env_ = params_;
  current_loc_ = program.loc;
  grid_ = eval_ints(program.grid, "a grid extent");
  for (size_t d = 0; d < grid_.size(); ++d) {
    const int64_t g = grid_[d];
    if (g < 0) raise(program.loc, "the grid extent {} is negative", g);
    // The limits of every CUDA GPU since compute capability 3.0: what a GPU could not launch is no run.
    const int64_t limit = d == 0 ? target::kMaxGridX : target::kMaxGridYZ;
    if (g > limit) {
      raise(program.loc, "the grid {} has extent {} in dimension {}; a GPU launches at most {}",
            format_index(grid_), g, "xyz"[d], limit);
    }
    total_blocks_ *= g;
  }
  threads_ = program.threads;
  if (!program.cluster.empty()) {
    clustered_ = true;
    cluster_.assign(grid_.size(), 1);
    for (size_t d = 0; d < program.cluster.size() && d < grid_.size(); ++d) cluster_[d] = program.cluster[d];
    for (size_t d = 0; d < grid_.size(); ++d) {
      // The launch of a grid that clusters do not tile fails (cudaErrorInvalidClusterSize).
      if (cluster_[d] < 1 || grid_[d] % cluster_[d] != 0)
        raise(
            program.loc,
            "the grid {} does not divide into clusters of {}: extent {} in dimension {} is not a multiple of "
            "{} (the GPU would refuse the launch)",
            format_index(grid_), format_index(cluster_), grid_[d], "xyz"[d], cluster_[d]);
      cluster_blocks_ *= cluster_[d];
    }
    first_barrier_actor_ = static_cast<uint16_t>(cluster_blocks_ * kActorsPerBlock);
  }
}

void Machine::run() {
  int64_t first = std::max<int64_t>(options_.first_block, 0);
  int64_t last =
      options_.num_blocks < 0 ? total_blocks_ : std::min(total_blocks_, first + options_.num_blocks);
  try {
    if (clustered_) {
      // Cluster by cluster (x fastest), each with its blocks together; one runs when any of its blocks'
      // linear indices is among the selected.
      const int64_t clusters = total_blocks_ / cluster_blocks_;
      for (int64_t n = 0; n < clusters; ++n) {
        const int64_t linear = options_.reverse_blocks ? clusters - 1 - n : n;
        Index origin(grid_.size());
        int64_t rest = linear;
        bool selected = false;
        for (size_t d = 0; d < grid_.size(); ++d) {
          const int64_t along = grid_[d] / cluster_[d];
          origin[d] = rest % along * cluster_[d];
          rest /= along;
        }
        for (int64_t r = 0; r < cluster_blocks_ && !selected; ++r) {
          int64_t b = 0, stride = 1, q = r;
          for (size_t d = 0; d < grid_.size(); ++d) {
            b += (origin[d] + q % cluster_[d]) * stride;
            q /= cluster_[d];
            stride *= grid_[d];
          }
          selected = b >= first && b < last;
        }
        if (selected) run_cluster(linear);
      }
      launch_finished_ = true;
      finish_launch(first == 0 && last == total_blocks_);
      return;
    }
    for (int64_t n = first; n < last; ++n) {
      const int64_t linear = options_.reverse_blocks ? first + last - 1 - n : n;
      // The first grid dimension varies fastest (CUDA's blockIdx.x order).
      Index block(grid_.size());
      int64_t rest = linear;
      for (size_t d = 0; d < grid_.size(); ++d) {
        block[d] = rest % grid_[d];
        rest /= grid_[d];
      }
      start_block_order(linear);
      run_block(block);
    }
  } catch (...) {
    finish_launch(false);  // the caller's buffers keep no marks of this launch
    throw;
  }
  launch_finished_ = true;  // what finish_launch reports is the launch's, not a block's
  finish_launch(first == 0 && last == total_blocks_);
}

void Machine::run_block(const Index& block) {
  block_index_ = block;
  env_ = params_;
  shared_.clear();
  shared_bytes_ = 0;
  copies_.clear();
  open_group_ = 0;
  committed_groups_ = 0;
  dots_.clear();
  dot_register_operands_.clear();
  stores_.clear();
  fences_.clear();
  last_allocation_.clear();
  for (GlobalBuffer* b : tma_stored_buffers_) b->tma_stored.clear();
  tma_stored_buffers_.clear();
  next_epoch_ = 0;
  actor_ = 0;
  clock_.assign(1, fresh_epoch());
  sync_epoch_ = clock_[0];
  barrier_actors_.clear();
  exec_block(program_.body);
  check_block_end();
}

void Machine::check_block_end() {
  // A block that ends with a DotAsync in flight: its accumulator is never complete (and the GPU would run
  // the next block's code into registers the tensor cores still write).
  for (const AsyncIssues::Entry& d : dots_.entries())
    if (!d.retired)
      raise(*d.loc, "the block ends with this DotAsync still in flight: no DotAsyncWait retired it");
  // Nor with a TMA store still reading its shared source, which may already belong to the next block.
  for (const AsyncIssues::Entry& st : stores_.entries())
    if (!st.retired)
      raise(*st.loc,
            "the block ends with this StoreTma still reading shared '{}': no StoreTmaWait retired it "
            "(StoreTmaWait(0) before the end)",
            st.what);
  // A block that ends while a TMA copy still writes its shared memory: on the GPU the memory may already
  // belong to the next block.
  for (const PendingCopy& c : copies_)
    if (c.barrier && !c.landed)
      raise(*c.loc,
            "the block ends with this CopyTma still in flight: no BarrierWait waited for the phase of {}[{}] "
            "it completes on",
            c.barrier->name, c.barrier_index);
  // Nor before another block's arrival on its barriers (the memory may be the next block's by then).
  for (const Access& a : remote_arrivals_)
    if (!happened_before(a, -1))
      raise(*a.loc,
            "the cluster's block {} may end before this arrival on its barrier: nothing orders the arrival "
            "before its end (the block must wait for the phase it completes before it ends)",
            format_index(block_index_));
}

Flow Machine::exec_block(const ir::Block& block) {
  for (size_t k = 0; k < block.size(); ++k) {
    if (block[k]->kind == ir::StmtKind::Region) {  // a section: the regions that follow run together
      size_t end = k + 1;
      while (end < block.size() && block[end]->kind == ir::StmtKind::Region) ++end;
      run_section(block, k, end);
      k = end - 1;
      continue;
    }
    Flow f = exec_stmt(block[k]);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Flow Machine::exec_stmt(const ir::Stmt& s) {
  current_loc_ = s->loc;
  charge_steps(1);
  switch (s->kind) {
    case ir::StmtKind::Assign: {
      const auto& a = *s->as<ir::AssignStmt>();
      Value v;
      v.kind = Value::Kind::Scalar;
      v.scalar = convert_scalar(eval(a.value), a.var->type.dtype);
      bind(a.var, std::move(v));
      return Flow::Normal;
    }
    case ir::StmtKind::Inst:
      return exec_inst(*s->as<ir::InstStmt>());
    case ir::StmtKind::If: {
      const auto& n = *s->as<ir::IfStmt>();
      for (size_t k = 0; k < n.conditions.size(); ++k) {
        ScalarValue c = eval(n.conditions[k]);
        if (c.is_float ? c.f != 0.0 : c.i != 0) return exec_block(n.bodies[k]);
      }
      return n.has_else ? exec_block(n.else_body) : Flow::Normal;
    }
    case ir::StmtKind::For: {
      const auto& n = *s->as<ir::ForStmt>();
      const int64_t start = eval_int(n.start, "a range start");
      const int64_t stop = eval_int(n.stop, "a range stop");
      const int64_t step = n.step ? eval_int(n.step, "a range step") : 1;
      if (step == 0) raise(n.step ? n.step->loc : n.loc, "range step must not be zero");
      for (int64_t v = start; step > 0 ? v < stop : v > stop;) {
        Value iv;
        iv.kind = Value::Kind::Scalar;
        iv.scalar = convert_scalar(ScalarValue{false, v, 0.0}, n.var->type.dtype);
        bind(n.var, std::move(iv));
        charge_steps(1);  // an iteration of an empty body (`pass`) is work too
        Flow f = exec_block(n.body);
        if (f == Flow::Break) break;
        if (f == Flow::Stop) return f;
        // A next value past the i64 range ends the loop, as range() would (v += step would wrap around
        // into the range and loop forever).
        const std::optional<int64_t> next = checked_add(v, step);
        if (!next) break;
        v = *next;
      }
      return Flow::Normal;
    }
    case ir::StmtKind::While: {
      const auto& n = *s->as<ir::WhileStmt>();
      while (true) {
        ScalarValue c = eval(n.condition);
        if (!(c.is_float ? c.f != 0.0 : c.i != 0)) break;
        charge_steps(1);
        Flow f = exec_block(n.body);
        if (f == Flow::Break) break;
        if (f == Flow::Stop) return f;
      }
      return Flow::Normal;
    }
    case ir::StmtKind::Break:
      return Flow::Break;
    case ir::StmtKind::Continue:
      return Flow::Continue;
    case ir::StmtKind::Return:
      return Flow::Stop;
    case ir::StmtKind::Region:  // exec_block runs sections
      run_section(ir::Block{s}, 0, 1);
      return Flow::Normal;
    case ir::StmtKind::Parallel:
      raise(s->loc,
            "a Parallel loop is the tile layer's: the interpreter runs the lowered program "
            "(transform::lower)");
  }
  return Flow::Normal;
}

void Machine::bind(const ir::Var& var, Value value) {
  if (!dot_register_operands_.empty()) check_not_dot_register_operand(var);
  env_[var.get()] = std::move(value);
}

Value& Machine::lookup(const ir::Var& var) {
  auto it = env_.find(var.get());
  if (it == env_.end() || it->second.kind == Value::Kind::None) {
    raise(current_loc_, "'{}' is used before it is defined", var ? var->name : "?");
  }
  return it->second;
}

void Machine::define_results(const ir::InstStmt& s, Value v) {
  if (!s.results.empty()) bind(s.results[0], std::move(v));
}

namespace {

Value reg_value(RegPtr r) {
  Value v;
  v.kind = Value::Kind::Register;
  v.reg = std::move(r);
  return v;
}

}  // namespace

Flow Machine::exec_inst(const ir::InstStmt& s) {
  const ir::InstNode& inst = *s.inst;
  current_loc_ = inst.loc.known() ? inst.loc : s.loc;
  current_loc_ptr_ = inst.loc.known() ? &inst.loc : &s.loc;
  if (section_) schedule_point(Point::Instruction);
  ++exec_;
  // A register result goes to `out=` when given, else to the statement's result variable.
  auto set_reg = [&](const ir::Var& out, RegPtr r) {
    if (out) {
      // out= overwrites the registers: not while a DotAsync still accumulates into them.
      auto it = env_.find(out.get());
      if (it != env_.end() && it->second.kind == Value::Kind::Register && it->second.reg)
        check_not_dot_accumulator(*it->second.reg, out->name);
      bind(out, reg_value(std::move(r)));
    } else {
      define_results(s, reg_value(std::move(r)));
    }
  };
  switch (inst.kind) {
    case ir::InstKind::BlockIndices:
      for (size_t k = 0; k < s.results.size(); ++k) {
        Value v;
        v.kind = Value::Kind::Scalar;
        v.scalar = ScalarValue{false, k < block_index_.size() ? block_index_[k] : 0, 0.0};
        bind(s.results[k], std::move(v));
      }
      break;
    case ir::InstKind::Synchronize:
      // Every async copy still pending stays pending: only CopyAsyncWaitGroup lands it. (In a region it
      // synchronizes the region's threads.)
      clock_[actor_] = fresh_epoch();
      sync_epoch_ = clock_[actor_];
      record_fence_event(actor_, sync_epoch_, false);
      break;
    case ir::InstKind::Exit:
      return Flow::Stop;
    case ir::InstKind::Print:
      print(*inst.as<ir::PrintInst>());
      break;
    case ir::InstKind::ViewGlobal:
      define_results(s, view_global(*inst.as<ir::ViewGlobalInst>()));
      break;
    case ir::InstKind::AllocateGlobal:
      define_results(s, allocate_global(*inst.as<ir::AllocateGlobalInst>(),
                                        s.results.empty() ? std::string("workspace") : s.results[0]->name));
      break;
    case ir::InstKind::LoadGlobal: {
      const auto& n = static_cast<const ir::LoadInst&>(inst);
      set_reg(n.out, load_global(n));
      break;
    }
    case ir::InstKind::StoreGlobal:
      store_global(static_cast<const ir::StoreInst&>(inst), false);
      break;
    case ir::InstKind::AtomicAddGlobal:
      store_global(static_cast<const ir::StoreInst&>(inst), true);
      break;
    case ir::InstKind::TakeTicket: {
      Value v;
      v.kind = Value::Kind::Scalar;
      v.scalar = take_ticket(*inst.as<ir::TakeTicketInst>());
      define_results(s, std::move(v));
      break;
    }
    case ir::InstKind::AllocateShared: {
      if (s.results.empty()) break;  // nothing can refer to it
      define_results(s, allocate_shared(*inst.as<ir::AllocateSharedInst>(), s.results[0]));
      break;
    }
    case ir::InstKind::FreeShared: {
      SharedBuffer& b = shared_operand(ir::TensorArg{inst.as<ir::FreeSharedInst>()->tensor, {}, inst.loc});
      b.freed = true;
      break;
    }
    case ir::InstKind::LoadShared: {
      const auto& n = static_cast<const ir::LoadInst&>(inst);
      set_reg(n.out, load_shared(n));
      break;
    }
    case ir::InstKind::StoreShared:
      store_shared(static_cast<const ir::StoreInst&>(inst));
      break;
    case ir::InstKind::AllocateBarrier:
      if (s.results.empty()) break;
      define_results(s, allocate_barrier(*inst.as<ir::AllocateBarrierInst>(), s.results[0]));
      break;
    case ir::InstKind::BarrierArrive:
      barrier_arrive(*inst.as<ir::BarrierArriveInst>());
      break;
    case ir::InstKind::BarrierWait:
      barrier_wait(*inst.as<ir::BarrierWaitInst>());
      break;
    case ir::InstKind::CopyTma:
      copy_tma(*inst.as<ir::CopyTmaInst>());
      break;
    case ir::InstKind::StoreTma:
      store_tma(*inst.as<ir::StoreTmaInst>());
      break;
    case ir::InstKind::StoreTmaWait:
      store_tma_wait(*inst.as<ir::StoreTmaWaitInst>());
      break;
    case ir::InstKind::ClusterSync:
      cluster_sync();
      break;
    case ir::InstKind::CopyAsync:
      copy_async(*inst.as<ir::CopyAsyncInst>());
      break;
    case ir::InstKind::CopyAsyncCommitGroup:
      commit_group();
      break;
    case ir::InstKind::CopyAsyncWaitGroup:
      wait_group(*inst.as<ir::CopyAsyncWaitGroupInst>());
      break;
    case ir::InstKind::AllocateRegister:
      define_results(s, reg_value(allocate_register(*inst.as<ir::AllocateRegisterInst>())));
      break;
    case ir::InstKind::Iota:
      define_results(s, reg_value(iota(*inst.as<ir::IotaInst>())));
      break;
    case ir::InstKind::Cast: {
      const auto& n = *inst.as<ir::CastInst>();
      set_reg(n.out, cast(n));
      break;
    }
    case ir::InstKind::View:
      define_results(s, reg_value(view(*inst.as<ir::ViewInst>())));
      break;
    case ir::InstKind::Elementwise: {
      const auto& n = *inst.as<ir::ElementwiseInst>();
      // The result's type is the one inference gave its variable (inst_types.cpp), as for Reduce.
      const ir::Var& target = n.out ? n.out : (s.results.empty() ? nullptr : s.results[0]);
      if (!target || !target->type.is_tensor()) raise(inst.loc, "{} has no result tensor", inst.name());
      set_reg(n.out, elementwise(n, target->type.tensor->dtype));
      break;
    }
    case ir::InstKind::Reduce: {
      const auto& n = *inst.as<ir::ReduceInst>();
      const ir::Var& target = n.out ? n.out : (s.results.empty() ? nullptr : s.results[0]);
      if (!target || !target->type.is_tensor() || !target->type.tensor->layout) {
        raise(inst.loc, "{} has no result tensor", inst.name());
      }
      set_reg(n.out, reduce(n, *target->type.tensor->layout));
      break;
    }
    case ir::InstKind::Dot: {
      const auto& n = *inst.as<ir::DotInst>();
      set_reg(n.out, dot(n));
      break;
    }
    case ir::InstKind::DotAsync:
      dot_async(*inst.as<ir::DotAsyncInst>());
      break;
    case ir::InstKind::DotAsyncWait:
      dot_async_wait(*inst.as<ir::DotAsyncWaitInst>());
      break;
    case ir::InstKind::AllocateFragment:
    case ir::InstKind::Copy:
    case ir::InstKind::Gemm:
    case ir::InstKind::Fill:
    case ir::InstKind::AtomicAdd:
    case ir::InstKind::Rasterize:
      // The tile layer's operators run as what transform::lower turns them into.
      raise(current_loc_,
            "{} is a tile operator: the interpreter runs the lowered program (transform::lower)",
            inst.name());
  }
  return Flow::Normal;
}

RegTensor& Machine::reg_operand(const ir::TensorArg& arg) {
  Value& v = lookup(arg.tensor);
  if (v.kind != Value::Kind::Register) raise(current_loc_, "'{}' is not a register tensor", arg.tensor->name);
  if (!arg.slices.empty()) raise(current_loc_, "register tensor '{}' cannot be sliced", arg.tensor->name);
  charge_steps(static_cast<int64_t>(v.reg->codes.size()));
  if (dot_in_flight(v.reg->dot_seq)) check_not_dot_accumulator(*v.reg, arg.tensor->name);
  if (v.reg->region != region_) {  // the verifier refuses it; a program built around it must not run
    const ir::RegionStmt* r = v.reg->region ? v.reg->region : region_;
    raise(current_loc_, "register tensor '{}' is held by {} but used by {} (Warpgroups({}, {}) at {})",
          arg.tensor->name, v.reg->region ? "a region" : "the block", region_ ? "a region" : "the block",
          r->first, r->stop, loc_text(r->loc));
  }
  return *v.reg;
}

void Machine::steps_exceeded() {
  raise(current_loc_,
        "the run has taken more than {} steps, its budget (tilevm run --max-steps; a step is a statement "
        "executed or an element an instruction touches)",
        options_.max_steps);
}

RegPtr Machine::new_reg(DataType dtype, const layout::Layout& lay) {
  if (threads_ > 0 && lay.num_threads() != threads_) {
    raise(current_loc_, "layout has {} threads but the program has {}", lay.num_threads(), threads_);
  }
  const std::optional<int64_t> pairs = checked_mul(lay.num_threads(), lay.num_locals());
  const int64_t slots = pairs.value_or(INT64_MAX);
  charge_steps(slots);
  // A code and an initialized flag per slot, only checked: register tensors come and go with their values.
  // Checked before the layout's table (4 bytes a slot, layout_tables.cpp) is built, so that neither exhausts
  // the host. (The message is formatted only when the check fails: this is the interpreter's hot path.)
  const std::optional<int64_t> bytes = checked_mul(slots, static_cast<int64_t>(sizeof(uint64_t) + 1));
  if (!bytes || *bytes + workspace_bytes_ + shared_bytes_ > options_.max_memory) {
    charge_memory(bytes.value_or(-1), nullptr, current_loc_,
                  fmt::format("a register tensor of {}{} ({} threads x {} slots)", dtype.name(),
                              format_index(lay.shape()), lay.num_threads(), lay.num_locals()));
  }
  auto r = std::make_shared<RegTensor>();
  r->region = region_;
  r->dtype = dtype;
  r->table = &layouts_.get(lay);
  const size_t n = static_cast<size_t>(slots);
  r->codes.assign(n, 0);
  r->init.assign(n, 0);
  return r;
}

void Machine::check_init(const RegTensor& r, const std::string& name) {
  if (r.all_init) return;
  const int64_t m = r.table->locals;
  for (size_t k = 0; k < r.init.size(); ++k) {
    if (!r.init[k]) {
      const int64_t t = static_cast<int64_t>(k) / m, i = static_cast<int64_t>(k) % m;
      raise(current_loc_, "read of uninitialized register tensor '{}' element {} (thread {}, slot {})", name,
            format_index(unravel(r.table->lin[k], r.table->shape)), t, i);
    }
  }
  const_cast<RegTensor&>(r).all_init = true;
}

void Machine::check_init(const RegTensor& r, const ir::TensorArg& arg) {
  check_init(r, arg.tensor->name);
}

}  // namespace detail

bool detail::run_schedule(const ir::Program& program, Arguments& args, Diagnostics& diags,
                          const RunOptions& options, const Schedule& schedule, int64_t& steps) {
  std::unique_ptr<detail::Machine> machine;
  SourceLoc loc;
  try {
    machine = std::make_unique<detail::Machine>(program, args, options, schedule);
    machine->start_steps(steps);
    machine->run();
    steps = machine->steps();
    return true;
  } catch (const detail::RunError& e) {
    loc = e.loc;
    diags.error(loc, "{}", e.message);
    for (const auto& [at, note] : e.notes) diags.add(Severity::Note, at, note);
  } catch (const Error& e) {
    loc = machine ? machine->current_loc() : program.loc;
    diags.error(loc, "{}", e.what());
  } catch (const std::bad_alloc&) {
    // What charge_memory does not count (layout tables, temporaries) can still exhaust the host.
    loc = machine ? machine->current_loc() : program.loc;
    diags.error(loc, "the interpreter ran out of host memory here (the budget is {})",
                format_bytes(options.max_memory));
  }
  if (machine && machine->multi_block() && !machine->launch_finished()) {
    diags.add(Severity::Note, loc,
              fmt::format("in block {}", detail::format_index(machine->current_block())));
  }
  return false;
}

}  // namespace tilevm::interp
