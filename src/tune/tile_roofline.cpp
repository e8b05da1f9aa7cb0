// The roofline model over a lowered tile program (tile_roofline.h says what it counts and why): a walker
// that runs one block's scalar code and counts its instructions, the first wave's tile requests for the L2
// reuse, and the per-wave roofline.
#include "tilevm/tune/tile_roofline.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "tilevm/interp/scalar_eval.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/support/error.h"
#include "tilevm/support/int_math.h"

namespace tilevm::tune {

namespace {

// Loops longer than this run their first and last kEdge iterations exactly and stand for the others by
// one middle iteration weighted by their count: a pipelined loop's prologue and drain differ from its
// steady state, which every middle iteration repeats.
constexpr int64_t kEdge = 4;
constexpr int64_t kMaxStatements = 10'000'000;
constexpr int64_t kMaxWaveBlocks = 4096;  // blocks of the first wave whose requests are collected

double elements(const layout::Index& shape) {
  double n = 1;
  for (int64_t e : shape) n *= static_cast<double>(e);
  return n;
}

double bytes_of(double count, DataType dtype) {
  return count * dtype.bits() / 8.0;
}

// The elements of a shared or register operand's view.
double view_elements(const ir::TensorArg& arg) {
  const std::optional<layout::Index> shape = arg.static_view_shape();
  return shape ? elements(*shape) : 0;
}

// Lane operations of a register tile: every (thread, slot) pair, replicas included.
double lanes(const layout::Layout& layout) {
  return static_cast<double>(layout.num_threads()) * static_cast<double>(layout.num_locals());
}

const layout::Layout* register_layout(const ir::TensorArg& arg) {
  const ir::TensorType& t = arg.type();
  return t.scope == ir::Scope::Register && t.layout ? &*t.layout : nullptr;
}

int64_t words_per_thread(const layout::Layout& layout, DataType dtype) {
  return ceil_div(layout.num_locals() * dtype.bits(), int64_t{32});
}

bool truthy(const interp::ScalarValue& v) {
  return v.is_float ? v.f != 0 : v.i != 0;
}

// Runs one block's scalar code. In counting mode it adds every instruction's work, weighted by how many
// times it runs; in request mode it runs every loop once and records the global tiles the block asks for.
class BlockWalker {
 public:
  enum class Mode { Count, Requests };

  BlockWalker(const ir::Program& program, const ScalarArgs& args, int64_t block, Mode mode)
      : program_(program), mode_(mode) {
    for (const ir::Var& p : program.params)
      if (p->type.is_scalar()) env_[p.get()] = interp::ScalarValue{.is_float = false, .i = args.at(p->name)};
    // CUDA numbers blocks with the first grid dimension fastest.
    std::vector<int64_t> extents;
    for (const ir::Expr& e : program.grid) extents.push_back(eval_int(e));
    for (int64_t extent : extents) {
      block_index_.push_back(block % std::max<int64_t>(extent, 1));
      block /= std::max<int64_t>(extent, 1);
    }
  }

  void run() { walk(program_.body, 1.0); }

  const TileBlockWork& work() const { return work_; }
  // Request mode: the tiles asked for, by pointer parameter.
  const std::map<std::string, std::set<std::vector<int64_t>>>& requests() const { return requests_; }

  int64_t eval_int(const ir::Expr& e) {
    const interp::ScalarValue v = eval(e);
    return v.is_float ? static_cast<int64_t>(v.f) : v.i;
  }

 private:
  enum class Flow { Next, Break, Continue, Stop };

  interp::ScalarValue eval(const ir::Expr& e) {
    return interp::eval_scalar(e, [&](const ir::Var& var, SourceLoc loc) {
      const auto it = env_.find(var.get());
      if (it == env_.end())
        fail("{}:{}: '{}' has no value the cost model can know", loc.line, loc.col, var->name);
      return it->second;
    });
  }

  Flow walk(const ir::Block& block, double weight) {
    for (const ir::Stmt& s : block) {
      if (++statements_ > kMaxStatements)
        fail("a block runs more than {} statements: too long for the cost model to count", kMaxStatements);
      const Flow flow = step(*s, weight);
      if (flow != Flow::Next) return flow;
    }
    return Flow::Next;
  }

  Flow step(const ir::StmtNode& s, double weight) {
    switch (s.kind) {
      case ir::StmtKind::Assign: {
        const auto& a = *s.as<ir::AssignStmt>();
        env_[a.var.get()] = eval(a.value);
        return Flow::Next;
      }
      case ir::StmtKind::Inst:
        instruction(*s.as<ir::InstStmt>(), weight);
        return s.as<ir::InstStmt>()->inst->kind == ir::InstKind::Exit ? Flow::Stop : Flow::Next;
      case ir::StmtKind::If: {
        const auto& n = *s.as<ir::IfStmt>();
        for (size_t i = 0; i < n.conditions.size(); ++i)
          if (truthy(eval(n.conditions[i]))) return walk(n.bodies[i], weight);
        return walk(n.else_body, weight);
      }
      case ir::StmtKind::For:
        return loop(*s.as<ir::ForStmt>(), weight);
      case ir::StmtKind::While: {
        const auto& n = *s.as<ir::WhileStmt>();
        while (truthy(eval(n.condition))) {
          const Flow flow = walk(n.body, weight);
          if (flow == Flow::Stop) return flow;
          if (flow == Flow::Break || mode_ == Mode::Requests) break;
        }
        return Flow::Next;
      }
      case ir::StmtKind::Break:
        return Flow::Break;
      case ir::StmtKind::Continue:
        return Flow::Continue;
      case ir::StmtKind::Return:
        return Flow::Stop;
      case ir::StmtKind::Region:
        return walk(s.as<ir::RegionStmt>()->body, weight) == Flow::Stop ? Flow::Stop : Flow::Next;
      case ir::StmtKind::Parallel:  // lowered before the model sees the program
        throw InternalError("a Parallel loop reached the tile roofline model: it counts lowered programs");
    }
    return Flow::Next;
  }

  Flow loop(const ir::ForStmt& n, double weight) {
    const int64_t start = eval_int(n.start), stop = eval_int(n.stop), stride = eval_int(n.step);
    if (stride <= 0) fail("{}:{}: a loop with step {} cannot be counted", n.loc.line, n.loc.col, stride);
    const int64_t trips = stop > start ? ceil_div(stop - start, stride) : 0;
    auto iteration = [&](int64_t i, double w) {
      env_[n.var.get()] = interp::ScalarValue{.is_float = false, .i = start + i * stride};
      return walk(n.body, w);
    };
    std::vector<std::pair<int64_t, double>> plan;  // (iteration, weight)
    if (mode_ == Mode::Requests) {
      if (trips > 0) plan.emplace_back(0, weight);
    } else if (trips <= 2 * kEdge + 1) {
      for (int64_t i = 0; i < trips; ++i) plan.emplace_back(i, weight);
    } else {
      for (int64_t i = 0; i < kEdge; ++i) plan.emplace_back(i, weight);
      plan.emplace_back(kEdge, weight * static_cast<double>(trips - 2 * kEdge));
      for (int64_t i = trips - kEdge; i < trips; ++i) plan.emplace_back(i, weight);
    }
    for (const auto& [i, w] : plan) {
      const Flow flow = iteration(i, w);
      if (flow == Flow::Stop) return flow;
      if (flow == Flow::Break) break;
    }
    return Flow::Next;
  }

  // A read of global memory: its bytes, and in request mode the tile's position.
  void global_read(const ir::TensorArg& src, const std::vector<ir::Expr>& offset, double bytes,
                   double weight) {
    const auto it = globals_.find(src.tensor.get());
    const std::string name = it != globals_.end() ? it->second : src.tensor->name;
    if (mode_ == Mode::Count) {
      work_.load_bytes[name] += bytes * weight;
      return;
    }
    std::vector<int64_t> key;
    for (const ir::Slice& s : src.slices) key.push_back(s.value ? eval_int(s.value) : 0);
    for (const ir::Expr& e : offset) key.push_back(eval_int(e));
    requests_[name].insert(std::move(key));
  }

  void dot(const ir::TensorArg& a, const ir::TensorArg& b, const ir::TensorArg& c, bool transpose_a,
           double weight) {
    const std::optional<layout::Index> a_shape = a.static_view_shape(), c_shape = c.static_view_shape();
    if (!a_shape || !c_shape || a_shape->size() < 2) return;
    const double k = static_cast<double>(transpose_a ? (*a_shape)[a_shape->size() - 2] : a_shape->back());
    work_.mma_flops += 2 * elements(*c_shape) * k * weight;
    // wgmma reads shared operands itself: a once, b once per warpgroup (each multiplies its own rows by all
    // of b).
    const double warpgroups = std::max(1.0, program_.threads / 128.0);
    if (a.type().scope == ir::Scope::Shared) {
      work_.wgmma = true;
      work_.shared_bytes += bytes_of(view_elements(a), a.type().dtype) * weight;
    }
    if (b.type().scope == ir::Scope::Shared) {
      work_.wgmma = true;
      work_.shared_bytes += bytes_of(view_elements(b), b.type().dtype) * warpgroups * weight;
    }
  }

  void instruction(const ir::InstStmt& s, double weight) {
    const ir::InstNode& inst = *s.inst;
    switch (inst.kind) {
      case ir::InstKind::BlockIndices:
        for (size_t i = 0; i < s.results.size() && i < block_index_.size(); ++i)
          env_[s.results[i].get()] = interp::ScalarValue{.is_float = false, .i = block_index_[i]};
        return;
      case ir::InstKind::ViewGlobal: {
        const auto& n = *inst.as<ir::ViewGlobalInst>();
        const auto* ref = n.ptr->as<ir::VarRef>();
        if (!s.results.empty()) globals_[s.results[0].get()] = ref ? ref->var->name : s.results[0]->name;
        return;
      }
      case ir::InstKind::CopyAsync:
      case ir::InstKind::CopyTma: {
        const ir::TensorArg& dst = inst.kind == ir::InstKind::CopyAsync ? inst.as<ir::CopyAsyncInst>()->dst
                                                                        : inst.as<ir::CopyTmaInst>()->dst;
        const ir::TensorArg& src = inst.kind == ir::InstKind::CopyAsync ? inst.as<ir::CopyAsyncInst>()->src
                                                                        : inst.as<ir::CopyTmaInst>()->src;
        const double bytes = bytes_of(view_elements(dst), dst.type().dtype);
        global_read(src, {}, bytes, weight);
        if (mode_ == Mode::Count) work_.shared_bytes += bytes * weight;
        return;
      }
      default:
        break;
    }
    if (mode_ == Mode::Requests) {
      if (const auto* n = inst.as<ir::LoadGlobalInst>()) global_read(n->src, n->offset, 0, weight);
      return;
    }
    switch (inst.kind) {
      case ir::InstKind::LoadGlobal: {
        const auto& n = *inst.as<ir::LoadGlobalInst>();
        global_read(n.src, n.offset,
                    bytes_of(static_cast<double>(n.layout.num_elements()), n.src.type().dtype), weight);
        return;
      }
      case ir::InstKind::StoreGlobal:
      case ir::InstKind::AtomicAddGlobal: {
        const auto& n = static_cast<const ir::StoreInst&>(inst);
        if (const layout::Layout* l = register_layout(n.src))
          work_.store_bytes += bytes_of(static_cast<double>(l->num_elements()), n.dst.type().dtype) * weight;
        return;
      }
      case ir::InstKind::LoadShared: {
        const auto& n = *inst.as<ir::LoadSharedInst>();
        work_.shared_bytes += bytes_of(lanes(n.layout), n.src.type().dtype) * weight;
        return;
      }
      case ir::InstKind::StoreShared: {
        const auto& n = *inst.as<ir::StoreSharedInst>();
        if (const layout::Layout* l = register_layout(n.src))
          work_.shared_bytes += bytes_of(static_cast<double>(l->num_elements()), n.dst.type().dtype) * weight;
        return;
      }
      case ir::InstKind::StoreTma: {  // the tile read from shared memory and written to global memory
        const auto& n = *inst.as<ir::StoreTmaInst>();
        const double bytes = bytes_of(view_elements(n.src), n.src.type().dtype);
        work_.shared_bytes += bytes * weight;
        work_.store_bytes += bytes * weight;
        return;
      }
      case ir::InstKind::Dot: {
        const auto& n = *inst.as<ir::DotInst>();
        dot(n.a, n.b, n.c, n.transpose_a, weight);
        return;
      }
      case ir::InstKind::DotAsync: {
        const auto& n = *inst.as<ir::DotAsyncInst>();
        dot(n.a, n.b, n.c, n.transpose_a, weight);
        return;
      }
      case ir::InstKind::Synchronize:
      case ir::InstKind::ClusterSync:
      case ir::InstKind::BarrierWait:
      case ir::InstKind::CopyAsyncWaitGroup:
      case ir::InstKind::DotAsyncWait:
        work_.syncs += weight;
        return;
      case ir::InstKind::Cast:
        if (const layout::Layout* l = register_layout(inst.as<ir::CastInst>()->src))
          work_.alu_ops += lanes(*l) * weight;
        return;
      case ir::InstKind::Elementwise:
        for (const ir::Operand& op : inst.as<ir::ElementwiseInst>()->args)
          if (op.is_tensor()) {
            if (const layout::Layout* l = register_layout(*op.tensor)) work_.alu_ops += lanes(*l) * weight;
            break;
          }
        return;
      case ir::InstKind::Reduce:
        if (const layout::Layout* l = register_layout(inst.as<ir::ReduceInst>()->src))
          work_.alu_ops += lanes(*l) * weight;
        return;
      default:
        return;
    }
  }

  const ir::Program& program_;
  Mode mode_;
  std::vector<int64_t> block_index_;
  std::unordered_map<const ir::VarNode*, interp::ScalarValue> env_;
  std::unordered_map<const ir::VarNode*, std::string> globals_;  // global views -> their pointer parameter
  TileBlockWork work_;
  std::map<std::string, std::set<std::vector<int64_t>>> requests_;
  int64_t statements_ = 0;
};

// The register words of the temporary tiles a block's statements define (loads, casts, arithmetic; not
// the allocated accumulators), live together: those of the block itself, plus the most any nested
// statement needs, where a fully unrolled loop keeps every iteration's temporaries (the compiler hoists
// the unrolled loads, as the mma.sync Gemm's K slices show in ptxas's counts).
int64_t temporary_words(const ir::Block& block) {
  int64_t direct = 0, nested = 0;
  for (const ir::Stmt& st : block) {
    if (const auto* is = st->as<ir::InstStmt>()) {
      if (is->inst->kind == ir::InstKind::AllocateRegister) continue;
      for (const ir::Var& r : is->results)
        if (r->type.is_tensor() && r->type.tensor->scope == ir::Scope::Register && r->type.tensor->layout)
          direct += words_per_thread(*r->type.tensor->layout, r->type.dtype);
    } else if (const auto* f = st->as<ir::ForStmt>()) {
      int64_t copies = 1;
      const std::optional<int64_t> lo = ir::as_const_int(f->start), hi = ir::as_const_int(f->stop),
                                   step = ir::as_const_int(f->step);
      if (f->attrs.unroll == ir::LoopAttrs::kFullUnroll && lo && hi && step && *step > 0 && *hi > *lo)
        copies = ceil_div(*hi - *lo, *step);
      nested = std::max(nested, copies * temporary_words(f->body));
    } else if (const auto* i = st->as<ir::IfStmt>()) {
      for (const ir::Block& b : i->bodies) nested = std::max(nested, temporary_words(b));
      nested = std::max(nested, temporary_words(i->else_body));
    } else if (const auto* w = st->as<ir::WhileStmt>()) {
      nested = std::max(nested, temporary_words(w->body));
    } else if (const auto* g = st->as<ir::RegionStmt>()) {
      nested = std::max(nested, temporary_words(g->body));
    }
  }
  return direct + nested;
}

// Static facts of the program text: registers and the bytes a block keeps in flight.
class StaticFacts : public ir::IRVisitor {
 public:
  int64_t allocated_words = 0;  // register tensors allocated
  double in_flight = 0;

  void visit_inst_stmt(const ir::InstStmt& s) override {
    const ir::InstNode& inst = *s.inst;
    if (const auto* n = inst.as<ir::AllocateRegisterInst>())
      allocated_words += words_per_thread(n->layout, n->dtype);
    if (const auto* n = inst.as<ir::LoadGlobalInst>())
      in_flight += bytes_of(static_cast<double>(n->layout.num_elements()), n->src.type().dtype);
    const bool tma = inst.kind == ir::InstKind::CopyTma;
    if (inst.kind == ir::InstKind::CopyAsync || tma) {
      const ir::TensorArg& dst = tma ? inst.as<ir::CopyTmaInst>()->dst : inst.as<ir::CopyAsyncInst>()->dst;
      const double stage = bytes_of(view_elements(dst), dst.type().dtype);
      // A copy into one stage of a multi-buffered tile: the pipeline keeps S - 1 stages in flight (the TMA
      // pipeline all S); the same tile's prologue and steady-state copies count once.
      double ahead = 1;
      const std::optional<layout::Index> full = dst.type().static_shape();
      if (!dst.slices.empty() && dst.slices[0].kind == ir::Slice::Kind::Index && full && !full->empty())
        ahead = static_cast<double>(std::max<int64_t>((*full)[0] - (tma ? 0 : 1), 1));
      double& entry = staged_[dst.tensor.get()];
      in_flight += std::max(0.0, stage * ahead - entry);
      entry = std::max(entry, stage * ahead);
    }
    ir::IRVisitor::visit_inst_stmt(s);
  }

 private:
  std::unordered_map<const ir::VarNode*, double> staged_;
};

StaticFacts static_facts(const ir::Program& program) {
  StaticFacts facts;
  facts.visit_program(program);
  return facts;
}

int64_t blocks_per_sm(const TileRoofline& r, const target::Target& t) {
  return t.resident_blocks(r.cost.threads, r.registers, r.shared_bytes);
}

// Why the program cannot run on the target, or "".
std::string limit_exceeded(const TileRoofline& r, const target::Target& t) {
  if (r.cost.threads > t.max_threads_per_block)
    return fmt::format("{} threads per block; the target has at most {}", r.cost.threads,
                       t.max_threads_per_block);
  if (r.shared_bytes > t.shared_per_block)
    return fmt::format("{} bytes of shared memory per block; the target has at most {}", r.shared_bytes,
                       t.shared_per_block);
  if (r.registers > t.max_registers_per_thread)
    return fmt::format("about {} registers per thread; the target has at most {}", r.registers,
                       t.max_registers_per_thread);
  if (blocks_per_sm(r, t) < 1)
    return fmt::format(
        "one block needs more than an SM has ({} threads x about {} registers, {} bytes of shared "
        "memory)",
        r.cost.threads, r.registers, r.shared_bytes);
  return "";
}

// The fraction of the L2 requests of each tensor that the first wave's blocks make for distinct tiles.
std::map<std::string, double> distinct_fraction(const ir::Program& program, const ScalarArgs& args,
                                                int64_t wave_blocks) {
  std::map<std::string, std::set<std::vector<int64_t>>> distinct;
  std::map<std::string, double> total;
  for (int64_t b = 0; b < std::min(wave_blocks, kMaxWaveBlocks); ++b) {
    BlockWalker walker(program, args, b, BlockWalker::Mode::Requests);
    walker.run();
    for (const auto& [name, tiles] : walker.requests()) {
      total[name] += static_cast<double>(tiles.size());
      distinct[name].insert(tiles.begin(), tiles.end());
    }
  }
  std::map<std::string, double> fraction;
  for (const auto& [name, tiles] : distinct)
    fraction[name] = total[name] > 0 ? static_cast<double>(tiles.size()) / total[name] : 1.0;
  return fraction;
}

// The global bytes of each pointer parameter's views (the compulsory traffic when it fits in L2).
std::map<std::string, double> tensor_bytes(const ir::Program& program, BlockWalker& evaluator) {
  std::map<std::string, double> bytes;
  struct Views : ir::IRVisitor {
    std::vector<const ir::ViewGlobalInst*> views;
    void visit_inst(const ir::Inst& inst) override {
      if (const auto* n = inst->as<ir::ViewGlobalInst>()) views.push_back(n);
    }
  } views;
  views.visit_program(program);
  for (const ir::ViewGlobalInst* v : views.views) {
    const auto* ref = v->ptr->as<ir::VarRef>();
    if (!ref) continue;
    double n = 1;
    try {
      for (const ir::Expr& e : v->shape) n *= static_cast<double>(evaluator.eval_int(e));
    } catch (const Error&) {
      continue;  // a shape that needs the block's variables: its size is not known up front
    }
    bytes[ref->var->name] = std::max(bytes[ref->var->name], bytes_of(n, v->dtype));
  }
  return bytes;
}

}  // namespace

double TileBlockWork::total_load_bytes() const {
  double sum = 0;
  for (const auto& [name, bytes] : load_bytes) sum += bytes;
  return sum;
}

std::vector<ir::Var> missing_scalar_args(const ir::Program& program, const ScalarArgs& args) {
  std::vector<ir::Var> missing;
  for (const ir::Var& p : program.params)
    if (p->type.is_scalar() && !args.count(p->name)) missing.push_back(p);
  return missing;
}

namespace {

// estimate_registers' sum (tile_roofline.h), for facts already gathered.
int64_t registers_of(const StaticFacts& facts, const ir::Block& body) {
  return 24 + facts.allocated_words + temporary_words(body);
}

}  // namespace

int64_t estimate_registers(const ir::Program& lowered) {
  return registers_of(static_facts(lowered), lowered.body);
}

TileRoofline estimate_tile_program(const ir::Program& lowered, const ScalarArgs& args,
                                   const target::Target& t) {
  if (const std::vector<ir::Var> missing = missing_scalar_args(lowered, args); !missing.empty())
    fail("the scalar parameter '{}' has no value", missing[0]->name);
  TileRoofline r;
  const StaticFacts facts = static_facts(lowered);
  r.registers = registers_of(facts, lowered.body);
  r.in_flight_bytes = facts.in_flight;
  r.shared_bytes = lowered.shared_bytes.value_or(0);
  r.cost.threads = lowered.threads;

  BlockWalker block0(lowered, args, 0, BlockWalker::Mode::Count);
  r.cost.blocks = 1;
  for (const ir::Expr& e : lowered.grid) r.cost.blocks *= std::max<int64_t>(block0.eval_int(e), 0);
  r.exceeds = limit_exceeded(r, t);
  if (!r.exceeds.empty()) return r;
  if (r.cost.blocks == 0) {
    r.cost.seconds = t.launch_us * 1e-6;
    r.cost.bound = "launch";
    return r;
  }
  block0.run();
  r.block = block0.work();
  r.cost.blocks_per_sm = blocks_per_sm(r, t);

  const double blocks = static_cast<double>(r.cost.blocks);
  const int64_t concurrent = static_cast<int64_t>(t.sm_count) * r.cost.blocks_per_sm;
  r.cost.waves = ceil_div(r.cost.blocks, concurrent);
  r.wave_fraction = blocks / static_cast<double>(concurrent);

  // Whole-grid traffic. DRAM: each tensor's L2 requests scaled by the share of distinct tiles in a wave,
  // never below reading it once; all of them once when together they fit in half of L2.
  const std::map<std::string, double> footprint = tensor_bytes(lowered, block0);
  const std::map<std::string, double> distinct =
      distinct_fraction(lowered, args, std::min(r.cost.blocks, concurrent));
  double total_footprint = 0;
  for (const auto& [name, bytes] : r.block.load_bytes) {
    const auto f = footprint.find(name);
    total_footprint += f != footprint.end() ? f->second : bytes * blocks;
  }
  const bool fits = total_footprint <= 0.5 * static_cast<double>(t.l2_cache_bytes);
  for (const auto& [name, bytes] : r.block.load_bytes) {
    const double requests = bytes * blocks;
    const auto f = footprint.find(name);
    const double once = std::min(requests, f != footprint.end() ? f->second : requests);
    const auto d = distinct.find(name);
    const double share = d != distinct.end() ? d->second : 1.0;
    r.cost.dram_bytes += fits ? once : std::max(once, requests * share);
    r.cost.l2_bytes += requests;
  }
  const double stores = r.block.store_bytes * blocks;
  r.cost.dram_bytes += stores;
  r.cost.l2_bytes += stores;
  r.cost.mma_flops = r.block.mma_flops * blocks;
  r.cost.alu_ops = r.block.alu_ops * blocks;
  r.shared_traffic = r.block.shared_bytes * blocks;

  // Rates.
  const double sms = t.sm_count;
  const double tensor_per_sm = (r.block.wgmma ? t.gemm_tflops : t.mma_tflops) * 1e12 / sms;
  const double alu_per_sm = t.fma_tflops * 1e12 / 2 / sms;
  const double shared_per_sm = t.shared_gbps() * 1e9 / sms;
  const double dram_bw = t.dram_gbps * 1e9, l2_bw = t.l2_gbps * 1e9, sm_dram_bw = t.sm_dram_gbps * 1e9;
  const double latency = t.dram_latency_ns * 1e-9;
  const double dram_per_block = r.cost.dram_bytes / blocks, l2_per_block = r.cost.l2_bytes / blocks;
  const double warps = std::max(1.0, static_cast<double>(r.cost.threads) / 32);

  auto wave = [&](int64_t count, double n) {
    if (count <= 0 || n <= 0) return 0.0;
    const double b = static_cast<double>(count);
    const double active = std::min(sms, b);
    const double busiest = std::ceil(b / sms);  // blocks on the busiest SM
    // Tensor cores and ALUs need a warp on each of an SM's 4 sub-partitions.
    const double use = std::min(1.0, busiest * warps / 4);
    const double t_dram = b * dram_per_block / std::min(dram_bw, active * sm_dram_bw);
    const double t_l2 = b * l2_per_block / (l2_bw * active / sms);
    const double t_shared = busiest * r.block.shared_bytes / shared_per_sm;
    // A block's waits stall its own warps; the other blocks resident on the SM fill the bubble.
    const double t_tensor =
        busiest * r.block.mma_flops / (tensor_per_sm * use) + r.block.syncs * t.sync_ns * 1e-9 / busiest;
    const double t_alu = busiest * r.block.alu_ops / (alu_per_sm * use);
    // Little's law per block: its loads go out at most in_flight bytes per round trip to memory.
    const double t_latency = r.block.total_load_bytes() / std::max(r.in_flight_bytes, 1.0) * latency;
    r.times.dram += n * t_dram;
    r.times.l2 += n * t_l2;
    r.times.shared += n * t_shared;
    r.times.tensor += n * t_tensor;
    r.times.alu += n * t_alu;
    r.times.latency += n * t_latency;
    return n * std::max({t_dram, t_l2, t_shared, t_tensor, t_alu, t_latency});
  };
  const double busy =
      wave(concurrent, static_cast<double>(r.cost.blocks / concurrent)) + wave(r.cost.blocks % concurrent, 1);
  r.times.launch = t.launch_us * 1e-6 + latency;
  r.cost.seconds = r.times.launch + busy;

  const std::pair<double, const char*> bounds[] = {{r.times.dram, "dram"},     {r.times.latency, "latency"},
                                                   {r.times.l2, "l2"},         {r.times.shared, "shared"},
                                                   {r.times.tensor, "tensor"}, {r.times.alu, "alu"},
                                                   {r.times.launch, "launch"}};
  r.cost.bound = std::max_element(std::begin(bounds), std::end(bounds), [](const auto& x, const auto& y) {
                   return x.first < y.first;
                 })->second;
  r.slowest_first = {r.times.dram, r.times.latency, r.times.l2, r.times.shared, r.times.tensor, r.times.alu};
  std::sort(r.slowest_first.begin(), r.slowest_first.end(), std::greater<>());
  return r;
}

}  // namespace tilevm::tune
