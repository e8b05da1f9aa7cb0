// Program structure: the kernel signature, declarations hoisted to the top (names are rebound Python-style,
// blocks open no scopes, so every variable lives for the whole kernel), scalars, control flow, and the
// dispatch of instructions to their family's emitter.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "emitter.h"
#include "tilevm/ir/printer.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/support/error.h"
#include "tilevm/type/packing.h"

namespace tilevm::codegen::cuda {

Unsupported::Unsupported(SourceLoc l, std::string r)
    : Error(fmt::format("{}:{}: {}", l.line, l.col, r)), loc(l), reason(std::move(r)) {}

void unsupported(const ir::InstStmt& s, const std::string& why) {
  throw Unsupported(s.loc, fmt::format("cannot compile {} for the GPU: {}", s.inst->name(), why));
}

std::string scalar_c_type(DataType t) {
  if (t.is_bool()) return "bool";
  if (t.is_float()) return t.bits() == 64 ? "double" : "float";
  if (t.kind() == TypeKind::SignedInt) return t.bits() == 64 ? "long long" : "int";
  return t.bits() == 64 ? "unsigned long long" : "unsigned int";
}

namespace {

// Every planned shared tensor's byte range (emit_shared.cpp: a tensor that reuses bytes waits for their
// readers).
class SharedRanges : public ir::IRVisitor {
 public:
  std::vector<std::pair<const ir::AllocateSharedInst*, ir::SharedPlacement>> ranges;
  void visit_inst_stmt(const ir::InstStmt& s) override {
    const auto* a = s.inst->as<ir::AllocateSharedInst>();
    if (a && a->placement) ranges.emplace_back(a, *a->placement);
  }
};

}  // namespace

Emitter::Emitter(const ir::Program& program, const EmitOptions& options)
    : program_(program), options_(options) {
  threads_ = program.threads;
  planned_bytes_ = program.shared_bytes.value_or(0);
  SharedRanges ranges;
  ranges.visit_program(program);
  shared_ranges_ = std::move(ranges.ranges);
  scratch_offset_ = (planned_bytes_ + 15) / 16 * 16;
  // Names that emitted blocks declare around code evaluating the program's own index expressions (chunk
  // and element loops, offsets, ldmatrix rows): a program scalar of the same name is renamed so that no
  // block shadows it. (Blocks that name only registers, such as the mma steps, need not be listed.)
  for (const char* reserved :
       {"t",    "lane",     "warp",    "tv_smem", "tv_workspace", "i",    "j",    "k",    "c",
        "e",    "g",        "q",       "x",       "off",          "doff", "soff", "addr", "mrow",
        "mcol", "first_in", "last_in", "aligned", "tv_ticket"})
    used_names_.insert(reserved);
}

std::string Emitter::fresh(const std::string& base) {
  std::string name = base;
  for (int n = 1; used_names_.count(name); ++n) name = base + "_" + std::to_string(n);
  used_names_.insert(name);
  return name;
}

void Emitter::line(const std::string& text) {
  body_ << std::string(static_cast<size_t>(indent_) * 2, ' ') << (region_ ? in_region(text) : text) << "\n";
}
void Emitter::open(const std::string& text) {
  line(text + " {");
  ++indent_;
}
void Emitter::close(const std::string& text) {
  --indent_;
  line(text);
}

std::string Emitter::loc_text(SourceLoc loc) const {
  return fmt::format("{}:{}", loc.line, loc.col);
}

void Emitter::comment_inst(const ir::InstStmt& s) {
  std::string names;
  for (const ir::Var& v : s.results) names += (names.empty() ? "" : ", ") + v->name;
  line(fmt::format("// line {}: {}{}", s.loc.line, names.empty() ? "" : names + " = ", s.inst->name()));
}

void Emitter::note(const ir::InstStmt& s, const std::string& choice) {
  selections_.push_back(fmt::format("{} {}: {}", loc_text(s.loc), s.inst->name(), choice));
  line("// " + choice);
}

std::string Emitter::scalar_name(const ir::Var& v) {
  auto it = scalars_.find(v.get());
  if (it != scalars_.end()) return it->second;
  const std::string name = fresh(v->name);
  scalars_[v.get()] = name;
  decls_.push_back(fmt::format("{} {} = 0;", scalar_c_type(v->type.dtype), name));
  return name;
}

const RegInfo& Emitter::reg(const ir::Var& v) {
  auto it = regs_.find(v.get());
  if (it != regs_.end()) return it->second;
  const ir::TensorType& t = *v->type.tensor;
  RegInfo info;
  info.name = fresh("r_" + v->name);
  info.dtype = t.dtype;
  info.layout = *t.layout;
  info.words = reg_words(t.dtype, info.layout);
  decls_.push_back(fmt::format(
      "tv_u32 {}[{}];  // {} {} {}", info.name, info.words, v->name, t.dtype.name(),
      info.layout.num_locals() == 1 ? "1 slot" : std::to_string(info.layout.num_locals()) + " slots"));
  return regs_.emplace(v.get(), std::move(info)).first->second;
}

const RegInfo& Emitter::reg_arg(const ir::TensorArg& a) {
  return reg(a.tensor);
}

const RegInfo& Emitter::result_reg(const ir::InstStmt& s, const ir::Var& out, DataType,
                                   const layout::Layout&) {
  if (out) return reg(out);
  if (s.results.empty()) unsupported(s, "the result is not used");  // the verifier does not allow this
  return reg(s.results[0]);
}

const MemTensor& Emitter::mem(const ir::Var& v) {
  auto it = mems_.find(v.get());
  TILEVM_ASSERT(it != mems_.end(), "memory tensor '{}' used before its definition", v->name);
  return it->second;
}

CExpr Emitter::int_expr(const ir::Expr& e) {
  if (auto c = ir::as_const_int(e)) return cconst(*c);
  return cvar("(int)(" + expr(e) + ")");
}

std::string Emitter::expr(const ir::Expr& e) {
  switch (e->kind) {
    case ir::ExprKind::IntImm: {
      const int64_t v = e->as<ir::IntImm>()->value;
      if (e->type.bits() == 64) return fmt::format("{}ll", v);
      return v < 0 ? fmt::format("({})", v) : std::to_string(v);
    }
    case ir::ExprKind::FloatImm: {
      const double v = e->as<ir::FloatImm>()->value;
      std::string text = fmt::format("{:.17g}", v);
      if (text.find_first_of(".en") == std::string::npos) text += ".0";
      if (text == "inf") text = "__longlong_as_double(0x7ff0000000000000ll)";
      if (text == "-inf") text = "(-__longlong_as_double(0x7ff0000000000000ll))";
      if (text == "nan" || text == "-nan") text = "__longlong_as_double(0x7ff8000000000000ll)";
      return e->type.bits() == 64 ? text : "(float)" + text;
    }
    case ir::ExprKind::BoolImm:
      return e->as<ir::BoolImm>()->value ? "true" : "false";
    case ir::ExprKind::VarRef:
      return scalar_name(e->as<ir::VarRef>()->var);
    case ir::ExprKind::Unary: {
      const auto* u = e->as<ir::UnaryExpr>();
      return fmt::format("({}{})", u->op == ir::UnaryOp::Neg ? "-" : "!", expr(u->a));
    }
    case ir::ExprKind::Binary: {
      const auto* b = e->as<ir::BinaryExpr>();
      const std::string x = expr(b->a), y = expr(b->b);
      const std::string ct = scalar_c_type(e->type);
      switch (b->op) {
        case ir::BinaryOp::Min:
          return fmt::format("(({0})({1}) < ({0})({2}) ? ({0})({1}) : ({0})({2}))", ct, x, y);
        case ir::BinaryOp::Max:
          return fmt::format("(({0})({1}) > ({0})({2}) ? ({0})({1}) : ({0})({2}))", ct, x, y);
        case ir::BinaryOp::CeilDiv:
          return fmt::format("(({})tv_ceil_div({}, {}))", ct, x, y);
        case ir::BinaryOp::And:
          return fmt::format("({} && {})", x, y);
        case ir::BinaryOp::Or:
          return fmt::format("({} || {})", x, y);
        default:
          return fmt::format("({} {} {})", x, ir::to_string(b->op), y);
      }
    }
  }
  return "0";
}

namespace {

const ir::InstStmt* inst_of(const ir::Stmt& s, ir::InstKind kind) {
  const auto* i = s->kind == ir::StmtKind::Inst ? s->as<ir::InstStmt>() : nullptr;
  return i && i->inst->kind == kind ? i : nullptr;
}

}  // namespace

void Emitter::emit_block(const ir::Block& b) {
  // A block's BarrierArrive right after a Synchronize() (directly, or first in the next statement's `if`,
  // whose condition is a scalar without effects) needs no barrier of its own: every thread's earlier
  // instructions are done already (an mma.sync pipeline with TMA copies: Synchronize, then thread 0
  // arms and refills the stage just read).
  for (size_t k = 0; k + 1 < b.size(); ++k) {
    if (!inst_of(b[k], ir::InstKind::Synchronize)) continue;
    const ir::Stmt* next = &b[k + 1];
    if ((*next)->kind == ir::StmtKind::If) {
      const auto* f = (*next)->as<ir::IfStmt>();
      if (f->bodies.empty() || f->bodies[0].empty()) continue;
      next = &f->bodies[0][0];
    }
    if (const ir::InstStmt* a = inst_of(*next, ir::InstKind::BarrierArrive);
        a && !a->inst->as<ir::BarrierArriveInst>()->rank)
      synced_arrivals_.insert(a);
  }
  for (size_t k = 0; k < b.size(); ++k) {
    if (b[k]->kind == ir::StmtKind::Region) {  // a section: the regions that follow run together
      size_t end = k + 1;
      while (end < b.size() && b[end]->kind == ir::StmtKind::Region) ++end;
      emit_section(b, k, end);
      k = end - 1;
      continue;
    }
    emit_stmt(b[k]);
  }
}

void Emitter::emit_stmt(const ir::Stmt& s) {
  switch (s->kind) {
    case ir::StmtKind::Assign: {
      const auto* a = s->as<ir::AssignStmt>();
      line(fmt::format("{} = ({}){};  // line {}", scalar_name(a->var), scalar_c_type(a->var->type.dtype),
                       expr(a->value), s->loc.line));
      return;
    }
    case ir::StmtKind::Inst:
      emit_inst(*s->as<ir::InstStmt>());
      return;
    case ir::StmtKind::If: {
      const auto* f = s->as<ir::IfStmt>();
      for (size_t k = 0; k < f->conditions.size(); ++k) {
        if (k == 0) {
          open(fmt::format("if ({})", expr(f->conditions[k])));
        } else {
          close(fmt::format("}} else if ({}) {{", expr(f->conditions[k])));
          ++indent_;
        }
        emit_block(f->bodies[k]);
      }
      if (f->has_else) {
        close("} else {");
        ++indent_;
        emit_block(f->else_body);
      }
      close();
      return;
    }
    case ir::StmtKind::For: {
      const auto* f = s->as<ir::ForStmt>();
      const std::string v = scalar_name(f->var);
      const auto step = ir::as_const_int(f->step);
      const std::string stop = fresh(f->var->name + "_stop"), inc = fresh(f->var->name + "_step");
      line(fmt::format("// line {}: for {} in range(...)", s->loc.line, f->var->name));
      open("");
      line(fmt::format("const long long {} = {}, {} = {};", stop, expr(f->stop), inc, expr(f->step)));
      std::string cond = step && *step > 0   ? fmt::format("{} < {}", v, stop)
                         : step && *step < 0 ? fmt::format("{} > {}", v, stop)
                                             : fmt::format("({0} > 0 ? {1} < {2} : {1} > {2})", inc, v, stop);
      open(fmt::format("for ({} = {}; {}; {} += {})", v, expr(f->start), cond, v, inc));
      emit_block(f->body);
      close();
      close();
      return;
    }
    case ir::StmtKind::While: {
      const auto* w = s->as<ir::WhileStmt>();
      open(fmt::format("while ({})", expr(w->condition)));
      emit_block(w->body);
      close();
      return;
    }
    case ir::StmtKind::Break:
      line("break;");
      return;
    case ir::StmtKind::Continue:
      line("continue;");
      return;
    case ir::StmtKind::Return:
      line("return;");
      return;
    case ir::StmtKind::Region:  // emit_block emits sections
      emit_section(ir::Block{s}, 0, 1);
      return;
    case ir::StmtKind::Parallel:
      throw InternalError("a Parallel loop reached the code generator: transform::lower lowers it");
  }
}

void Emitter::emit_inst(const ir::InstStmt& s) {
  current_ = &s;
  comment_inst(s);
  const ir::InstNode& n = *s.inst;
  switch (n.kind) {
    case ir::InstKind::BlockIndices: {
      static const char* dims[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
      for (size_t k = 0; k < s.results.size() && k < 3; ++k)
        line(fmt::format("{} = (int){};", scalar_name(s.results[k]), dims[k]));
      return;
    }
    case ir::InstKind::Synchronize:
      if (generic_writes_to_wgmma_operands_)
        line(
            "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");  // st.shared, cp.async before "
            "wgmma or a TMA store reads them");
      line("__syncthreads();");
      return;
    case ir::InstKind::Exit:
      line("return;");
      return;
    case ir::InstKind::Print:
      emit_print(s, *n.as<ir::PrintInst>());
      return;
    case ir::InstKind::ViewGlobal:
      emit_view_global(s, *n.as<ir::ViewGlobalInst>());
      return;
    case ir::InstKind::AllocateGlobal:
      emit_allocate_global(s, *n.as<ir::AllocateGlobalInst>());
      return;
    case ir::InstKind::LoadGlobal:
      emit_load(s, *n.as<ir::LoadGlobalInst>());
      return;
    case ir::InstKind::StoreGlobal:
      emit_store(s, *n.as<ir::StoreGlobalInst>());
      return;
    case ir::InstKind::AtomicAddGlobal:
      emit_atomic_add(s, *n.as<ir::AtomicAddGlobalInst>());
      return;
    case ir::InstKind::TakeTicket:
      emit_take_ticket(s, *n.as<ir::TakeTicketInst>());
      return;
    case ir::InstKind::AllocateShared:
      emit_allocate_shared(s, *n.as<ir::AllocateSharedInst>());
      return;
    case ir::InstKind::FreeShared:
      line("// (its space may be reused from here: planned statically)");
      return;
    case ir::InstKind::LoadShared:
      emit_load(s, *n.as<ir::LoadSharedInst>());
      return;
    case ir::InstKind::StoreShared:
      emit_store(s, *n.as<ir::StoreSharedInst>());
      return;
    case ir::InstKind::CopyAsync:
      emit_copy_async(s, *n.as<ir::CopyAsyncInst>());
      return;
    case ir::InstKind::CopyAsyncCommitGroup:
      line("asm volatile(\"cp.async.commit_group;\\n\" ::);");
      return;
    case ir::InstKind::CopyAsyncWaitGroup: {
      const auto w = ir::as_const_int(n.as<ir::CopyAsyncWaitGroupInst>()->n);
      if (!w || *w < 0 || *w > 7) unsupported(s, "CopyAsyncWaitGroup needs a constant count from 0 to 7");
      line(fmt::format("asm volatile(\"cp.async.wait_group {};\\n\" ::: \"memory\");", *w));
      return;
    }
    case ir::InstKind::AllocateBarrier:
      emit_allocate_barrier(s, *n.as<ir::AllocateBarrierInst>());
      return;
    case ir::InstKind::BarrierArrive:
      emit_barrier_arrive(s, *n.as<ir::BarrierArriveInst>());
      return;
    case ir::InstKind::BarrierWait:
      emit_barrier_wait(s, *n.as<ir::BarrierWaitInst>());
      return;
    case ir::InstKind::CopyTma:
      emit_copy_tma(s, *n.as<ir::CopyTmaInst>());
      return;
    case ir::InstKind::StoreTma:
      emit_store_tma(s, *n.as<ir::StoreTmaInst>());
      return;
    case ir::InstKind::StoreTmaWait:
      emit_store_tma_wait(s, *n.as<ir::StoreTmaWaitInst>());
      return;
    case ir::InstKind::ClusterSync:
      emit_cluster_sync(s);
      return;
    case ir::InstKind::AllocateRegister:
      emit_allocate_register(s, *n.as<ir::AllocateRegisterInst>());
      return;
    case ir::InstKind::Iota:
      emit_iota(s, *n.as<ir::IotaInst>());
      return;
    case ir::InstKind::Cast:
      emit_cast(s, *n.as<ir::CastInst>());
      return;
    case ir::InstKind::View:
      emit_view(s, *n.as<ir::ViewInst>());
      return;
    case ir::InstKind::Elementwise:
      emit_elementwise(s, *n.as<ir::ElementwiseInst>());
      return;
    case ir::InstKind::Reduce:
      emit_reduce(s, *n.as<ir::ReduceInst>());
      return;
    case ir::InstKind::Dot:
      emit_dot(s, *n.as<ir::DotInst>());
      return;
    case ir::InstKind::DotAsync:
      emit_dot_async(s, *n.as<ir::DotAsyncInst>());
      return;
    case ir::InstKind::DotAsyncWait:
      emit_dot_async_wait(s, *n.as<ir::DotAsyncWaitInst>());
      return;
    case ir::InstKind::AllocateFragment:
    case ir::InstKind::Copy:
    case ir::InstKind::Gemm:
    case ir::InstKind::Fill:
    case ir::InstKind::AtomicAdd:
    case ir::InstKind::Rasterize:
      throw InternalError(
          fmt::format("{} reached the code generator: transform::lower lowers tile operators", n.name()));
  }
}

std::string Emitter::scratch(int64_t bytes) {
  if (region_) return region_scratch(bytes);
  scratch_bytes_ = std::max(scratch_bytes_, bytes);
  return fmt::format("(tv_smem + {})", scratch_offset_);
}

std::string Emitter::thread_mask_all() const {
  return threads_ >= 32 ? "0xffffffffu" : fmt::format("0x{:x}u", (uint64_t{1} << threads_) - 1);
}

EmittedKernel Emitter::run() {
  // The passes' results that the emitter reads (transform/lower.h).
  if (threads_ <= 0 || !program_.shared_bytes)
    fail("program '{}' is not lowered: its {} not been set (run transform::lower first)", program_.name,
         threads_ <= 0 ? "thread count has" : "shared memory has");
  // Parameters first, so that their names are taken before any local.
  std::vector<std::string> params;
  std::vector<KernelParam> signature;
  for (const ir::Var& p : program_.params) {
    const std::string name = fresh(p->name);
    scalars_[p.get()] = name;
    if (p->type.is_pointer()) {
      signature.push_back({KernelParam::Kind::Pointer, p->name, p->type.dtype, "void*"});
      params.push_back("void* __restrict__ " + name);
    } else {
      signature.push_back({KernelParam::Kind::Scalar, p->name, p->type.dtype, scalar_c_type(p->type.dtype)});
      params.push_back(signature.back().c_type + " " + name);
    }
  }
  signature.push_back({KernelParam::Kind::Workspace, "tv_workspace", DataType::uint(8), "void*"});
  params.push_back("void* tv_workspace");
  collect_wgmma_facts();
  collect_barrier_arrivals();
  emit_block(program_.body);
  for (const KernelParam& p : tensor_maps_) {
    signature.push_back(p);
    params.push_back(p.c_type + " " + p.name);
  }

  scratch_bytes_ = std::max(scratch_bytes_, place_region_scratch(decls_));
  EmittedKernel k;
  k.kernel_name = "tilevm_" + program_.name;
  k.params = std::move(signature);
  k.threads = threads_;
  k.dynamic_shared_bytes = scratch_offset_ + (scratch_bytes_ + 15) / 16 * 16;
  k.workspace = workspace_;
  k.selections = selections_;
  check_target_limits(k);
  std::ostringstream out;
  out << "// Generated by tilevm from program '" << program_.name << "' for " << options_.target.arch
      << ".\n";
  out << "// " << threads_ << " threads per block, " << k.dynamic_shared_bytes
      << " bytes of dynamic shared memory (" << planned_bytes_ << " planned, " << scratch_bytes_
      << " scratch).\n\n";
  out << cuda_prelude() << "\n";
  for (const auto& [name, code] : helper_functions_) out << code << "\n";
  // setmaxnreg takes effect only under a register cap at entry: one block per SM.
  // A cluster's extents are the kernel's own attribute: a plain launch runs it in clusters.
  std::string cluster;
  if (!program_.cluster.empty()) {
    std::vector<int64_t> extents = program_.cluster;
    extents.resize(3, 1);
    cluster = fmt::format("__cluster_dims__({}) ", fmt::join(extents, ", "));
  }
  out << "extern \"C\" __global__ void " << cluster << "__launch_bounds__(" << threads_
      << (uses_setmaxnreg() ? ", 1" : "") << ") " << k.kernel_name << "(";
  for (size_t i = 0; i < params.size(); ++i) out << (i ? ", " : "") << params[i];
  out << ") {\n";
  // 1024: a swizzled TMA or wgmma tile is planned at a multiple of the swizzle's period (8 rows of 128 B).
  out << "  extern __shared__ __align__(" << (uses_swizzle_period_ ? 1024 : 128) << ") tv_u8 tv_smem[];\n";
  out << "  const int t = (int)threadIdx.x;\n";
  out << "  (void)tv_smem; (void)tv_workspace; (void)t;\n";
  if (uses_warpgroup_index_)
    out << "  const int tv_wg = __shfl_sync(0xffffffffu, t / 128, 0);  // the warpgroup, warp-uniform\n";
  for (const std::string& d : decls_) out << "  " << d << "\n";
  out << body_.str() << "}\n";
  k.source = out.str();
  return k;
}

// The block's threads and dynamic shared memory (planned tensors plus the SIMT paths' scratch, known only
// now) against the target's per-block limits: past them the launch would fail with a bare
// CUDA_ERROR_INVALID_VALUE, or the shared-memory opt-in with nothing to say which tensor is too large.
void Emitter::check_target_limits(const EmittedKernel& k) const {
  const target::Target& target = options_.target;
  if (k.threads > target.max_threads_per_block)
    fail("program '{}' needs {} threads per block; {} ({}) allows at most {}", program_.name, k.threads,
         target.arch, target.name, target.max_threads_per_block);
  if (k.dynamic_shared_bytes > target.shared_per_block)
    fail(
        "program '{}' needs {} bytes of shared memory per block ({} for its shared tensors, {} of scratch "
        "for element-wise paths); {} ({}) allows at most {}",
        program_.name, k.dynamic_shared_bytes, planned_bytes_, scratch_bytes_, target.arch, target.name,
        target.shared_per_block);
  if (!program_.cluster.empty() && !target.features.hopper)
    fail("program '{}' runs in thread-block clusters, which need sm_90 or newer; the target is {} ({})",
         program_.name, target.arch, target.name);
}

EmittedKernel emit_cuda(const ir::Program& program, const EmitOptions& options) {
  Emitter e(program, options);
  return e.run();
}

}  // namespace tilevm::codegen::cuda
