// The C++ builder (builder.h): the program's header, names, control flow and instructions.
#include "tilevm/ir/builder.h"

#include <set>

#include "tilevm/ir/inst_types.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/support/error.h"

namespace tilevm::ir {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool is_reserved(const std::string& s) {
  static const std::set<std::string> words = {
      "def", "for", "in",  "range", "if",    "elif", "else", "while",    "break", "continue", "return",
      "and", "or",  "not", "True",  "False", "min",  "max",  "ceil_div", "out",   "pass"};
  if (words.count(s)) return true;
  try {
    DataType::parse(s);
    return true;  // a type name (f16, u6, ...) would read as a dtype argument
  } catch (const Error&) {
    return false;
  }
}

std::vector<Expr> exprs(const std::vector<Scalar>& v) {
  std::vector<Expr> out;
  out.reserve(v.size());
  for (const Scalar& s : v) out.push_back(s.expr());
  return out;
}

}  // namespace

LayoutArg::LayoutArg(std::string_view text) : layout(layout::parse_layout(text)) {}

// ---- IfChain ----

IfChain& IfChain::elif_(const Scalar& condition, const std::function<void()>& body) {
  ProgramBuilder& b = *builder_;
  auto check = [&](const char* what) -> const IfStmt& {
    if (b.blocks_.size() != depth_ + 1 || b.blocks_[depth_].size() != index_ + 1) {
      fail("{} must directly follow its if_ (no statement in between, same block)", what);
    }
    const IfStmt* s = b.blocks_[depth_][index_]->as<IfStmt>();
    if (s->has_else) fail("{} after else_", what);
    return *s;
  };
  check("elif_");
  b.check_expr(condition.expr(), "the elif condition");
  Block body_block = b.capture(body);
  const IfStmt& s = check("elif_");
  auto conditions = s.conditions;
  auto bodies = s.bodies;
  conditions.push_back(condition.expr());
  bodies.push_back(std::move(body_block));
  b.blocks_[depth_][index_] =
      std::make_shared<IfStmt>(std::move(conditions), std::move(bodies), Block{}, false);
  return *this;
}

void IfChain::else_(const std::function<void()>& body) {
  ProgramBuilder& b = *builder_;
  auto check = [&]() -> const IfStmt& {
    if (b.blocks_.size() != depth_ + 1 || b.blocks_[depth_].size() != index_ + 1) {
      fail("else_ must directly follow its if_ (no statement in between, same block)");
    }
    const IfStmt* s = b.blocks_[depth_][index_]->as<IfStmt>();
    if (s->has_else) fail("an if_ has at most one else_");
    return *s;
  };
  check();
  Block body_block = b.capture(body);
  const IfStmt& s = check();
  b.blocks_[depth_][index_] = std::make_shared<IfStmt>(s.conditions, s.bodies, std::move(body_block), true);
}

// ---- Header and top level ----

ProgramBuilder::ProgramBuilder(std::string name) : blocks_(1) {
  if (!is_identifier(name)) fail("invalid program name '{}'", name);
  program_.name = std::move(name);
}

void ProgramBuilder::check_new_name(const std::string& name, const char* what) const {
  if (!is_identifier(name)) fail("invalid {} name '{}': expected an identifier", what, name);
  if (is_reserved(name)) fail("invalid {} name '{}': it is a keyword or a type name", what, name);
  for (const auto& [n, _] : program_.layouts) {
    if (n == name) fail("cannot use '{}' as a {} name: it is a named layout", name, what);
  }
  for (const auto& [n, _] : program_.constants) {
    if (n == name) fail("cannot use '{}' as a {} name: it is a constant", name, what);
  }
  for (const Var& p : program_.params) {
    if (p->name == name) fail("cannot use '{}' as a {} name: it is a parameter", name, what);
  }
}

void ProgramBuilder::bind(const Var& var) {
  bindings_[var->name] = var;
  if (in_region_) region_names_.insert(var->name);
}

void ProgramBuilder::check_current(const Var& var, const char* role) const {
  if (!var) fail("{} is a null variable", role);
  auto it = bindings_.find(var->name);
  if (it == bindings_.end())
    fail("{} '{}' is not a variable of program '{}'", role, var->name, program_.name);
  if (it->second != var) {
    fail("{} '{}' ({}) refers to a definition that a later '{}' = ... rebound (now {}); use the newer handle",
         role, var->name, to_string(var->type), var->name, to_string(it->second->type));
  }
}

void ProgramBuilder::check_expr(const Expr& e, const char* role) const {
  if (!e) fail("{} is an unset Scalar", role);
  if (const auto* r = e->as<VarRef>()) {
    check_current(r->var, role);
    if (r->var->type.is_tensor()) fail("{} uses tensor '{}' as a scalar", role, r->var->name);
  } else if (const auto* b = e->as<BinaryExpr>()) {
    check_expr(b->a, role);
    check_expr(b->b, role);
  } else if (const auto* u = e->as<UnaryExpr>()) {
    check_expr(u->a, role);
  }
}

void ProgramBuilder::check_ref(const TensorRef& ref, const char* role, std::optional<Scope> scope) const {
  const Var& v = ref.var();
  check_current(v, role);
  if (!v->type.is_tensor()) fail("{} must be a tensor, '{}' is {}", role, v->name, to_string(v->type));
  if (scope && v->type.tensor->scope != *scope) {
    fail("{} must be a {} tensor, '{}' is {}", role, to_string(*scope), v->name, to_string(v->type));
  }
  if (!ref.arg().slices.empty() && v->type.tensor->scope == Scope::Register) {
    fail("register tensors cannot be sliced: '{}' is {}", v->name, to_string(v->type));
  }
  for (const Slice& s : ref.arg().slices) {
    if (s.kind != Slice::Kind::Full) check_expr(s.value, role);
  }
}

void ProgramBuilder::check_offset(const std::vector<Scalar>& offset) const {
  for (const Scalar& s : offset) check_expr(s.expr(), "an offset");
}

int64_t ProgramBuilder::constant(const std::string& name, int64_t value) {
  check_new_name(name, "constant");
  program_.constants.emplace_back(name, Scalar(value).expr());
  return value;
}

layout::Layout ProgramBuilder::named_layout(const std::string& name, const layout::Layout& layout) {
  check_new_name(name, "layout");
  if (bindings_.count(name)) fail("cannot name a layout '{}': a variable has that name", name);
  program_.layouts.emplace_back(name, layout);
  return layout;
}

layout::Layout ProgramBuilder::named_layout(const std::string& name, std::string_view layout_text) {
  return named_layout(name, layout::parse_layout(layout_text));
}

Pointer ProgramBuilder::pointer_param(const std::string& name, DataType pointee) {
  check_new_name(name, "parameter");
  Var v = make_var(name, ValueType::pointer(pointee));
  program_.params.push_back(v);
  bind(v);
  return Pointer(v);
}

Scalar ProgramBuilder::scalar_param(const std::string& name, DataType type) {
  check_new_name(name, "parameter");
  Var v = make_var(name, ValueType::scalar(type));
  program_.params.push_back(v);
  bind(v);
  return Scalar(make_var_ref(v));
}

void ProgramBuilder::grid(const std::vector<Scalar>& extents) {
  if (extents.empty() || extents.size() > 3) fail("a grid has 1 to 3 dimensions, got {}", extents.size());
  if (grid_set_) fail("the grid of '{}' is already set", program_.name);
  for (const Scalar& e : extents) check_expr(e.expr(), "a grid extent");
  program_.grid = exprs(extents);
  grid_set_ = true;
}

void ProgramBuilder::cluster(std::vector<int64_t> extents) {
  for (int64_t c : extents)
    if (c < 1) fail("a cluster extent must be positive, got {}", c);
  program_.cluster = std::move(extents);
}

void ProgramBuilder::threads(int count) {
  if (count < 0) fail("threads must be positive, got {}", count);
  program_.threads = count;
}

// ---- Statements ----

Block& ProgramBuilder::current_block() {
  return blocks_.back();
}

void ProgramBuilder::append(Stmt stmt) {
  current_block().push_back(std::move(stmt));
}

Block ProgramBuilder::capture(const std::function<void()>& body) {
  blocks_.emplace_back();
  try {
    if (body) body();
  } catch (...) {
    blocks_.pop_back();
    throw;
  }
  Block out = std::move(blocks_.back());
  blocks_.pop_back();
  return out;
}

Scalar ProgramBuilder::let(const std::string& name, const Scalar& value, std::optional<DataType> dtype) {
  auto it = bindings_.find(name);
  // (In a region, a scalar of the block is shadowed: `name = ...` there defines the region's own.)
  if (it != bindings_.end() && it->second->type.is_scalar() && (!in_region_ || region_names_.count(name))) {
    fail("'{}' is already a scalar variable ({}): a second `{} = ...` updates it, so use assign()", name,
         to_string(it->second->type), name);
  }
  check_new_name(name, "variable");
  check_expr(value.expr(), "the value");
  Var v = make_var(name, ValueType::scalar(dtype.value_or(value.dtype())));
  append(std::make_shared<AssignStmt>(v, value.expr(), true));
  bind(v);
  return Scalar(make_var_ref(v));
}

void ProgramBuilder::assign(const Scalar& variable, const Scalar& value) {
  const auto* r = variable.expr()->as<VarRef>();
  if (!r || !r->var->type.is_scalar()) fail("assign() needs a scalar variable, got an expression");
  check_current(r->var, "the assigned variable");
  check_expr(value.expr(), "the value");
  append(std::make_shared<AssignStmt>(r->var, value.expr(), false));
}

void ProgramBuilder::for_range(const std::string& var, const Scalar& stop,
                               const std::function<void(Scalar)>& body) {
  for_range(var, 0, stop, 1, body);
}

void ProgramBuilder::for_range(const std::string& var, const Scalar& start, const Scalar& stop,
                               const std::function<void(Scalar)>& body) {
  for_range(var, start, stop, 1, body);
}

void ProgramBuilder::for_range(const std::string& var, const Scalar& start, const Scalar& stop,
                               const Scalar& step, const std::function<void(Scalar)>& body) {
  for_range(var, start, stop, step, LoopAttrs{}, body);
}

void ProgramBuilder::for_range(const std::string& var, const Scalar& start, const Scalar& stop,
                               const Scalar& step, const LoopAttrs& attrs,
                               const std::function<void(Scalar)>& body) {
  if (attrs.unroll < 0) fail("loop '{}': unroll={} must not be negative", var, attrs.unroll);
  if (attrs.stages < 1) fail("loop '{}': stages={} must be at least 1", var, attrs.stages);
  check_new_name(var, "loop variable");
  check_expr(start.expr(), "the loop start");
  check_expr(stop.expr(), "the loop stop");
  check_expr(step.expr(), "the loop step");
  Var v = make_var(var, ValueType::scalar(DataType::i32()));
  bind(v);
  ++loop_depth_;
  Block b;
  try {
    b = capture([&] { body(Scalar(make_var_ref(v))); });
  } catch (...) {
    --loop_depth_;
    throw;
  }
  --loop_depth_;
  append(
      std::make_shared<ForStmt>(v, start.expr(), stop.expr(), step.expr(), std::move(b), SourceLoc{}, attrs));
}

void ProgramBuilder::while_(const Scalar& condition, const std::function<void()>& body) {
  check_expr(condition.expr(), "the while condition");
  ++loop_depth_;
  Block b;
  try {
    b = capture(body);
  } catch (...) {
    --loop_depth_;
    throw;
  }
  --loop_depth_;
  append(std::make_shared<WhileStmt>(condition.expr(), std::move(b)));
}

IfChain ProgramBuilder::if_(const Scalar& condition, const std::function<void()>& body) {
  check_expr(condition.expr(), "the if condition");
  Block b = capture(body);
  append(std::make_shared<IfStmt>(std::vector<Expr>{condition.expr()}, std::vector<Block>{std::move(b)},
                                  Block{}, false));
  return IfChain(this, blocks_.size() - 1, current_block().size() - 1);
}

void ProgramBuilder::warpgroups(int64_t first, int64_t stop, const std::function<void()>& body) {
  warpgroups(first, stop, 0, body);
}

void ProgramBuilder::warpgroups(int64_t first, int64_t stop, int64_t registers,
                                const std::function<void()>& body) {
  // A loop around the region is not the region's to leave (break_ inside needs a loop of its own), and the
  // region's names are its own: after it, each name means what it meant before.
  const int saved_depth = loop_depth_;
  const std::map<std::string, Var> saved_bindings = bindings_;
  std::set<std::string> saved_names = std::move(region_names_);
  region_names_.clear();
  const bool saved_in_region = in_region_;
  auto restore = [&] {
    loop_depth_ = saved_depth;
    bindings_ = saved_bindings;
    region_names_ = std::move(saved_names);
    in_region_ = saved_in_region;
  };
  loop_depth_ = 0;
  in_region_ = true;
  Block b;
  try {
    b = capture(body);
  } catch (...) {
    restore();
    throw;
  }
  restore();
  append(std::make_shared<RegionStmt>(first, stop, registers, std::move(b)));
}

void ProgramBuilder::break_() {
  if (loop_depth_ == 0) fail("break_ outside a loop");
  append(std::make_shared<BreakStmt>());
}

void ProgramBuilder::continue_() {
  if (loop_depth_ == 0) fail("continue_ outside a loop");
  append(std::make_shared<ContinueStmt>());
}

void ProgramBuilder::return_() {
  append(std::make_shared<ReturnStmt>());
}

Program ProgramBuilder::build() const {
  if (!grid_set_) fail("program '{}' has no grid: call grid() first", program_.name);
  if (blocks_.size() != 1) fail("build() called inside a control-flow body");
  Program p = program_;
  p.body = blocks_[0];
  return p;
}

// ---- Instructions ----

std::vector<Var> ProgramBuilder::emit(const Inst& inst, const std::vector<std::string>& names) {
  Diagnostics diags;
  auto types = infer_result_types(*inst, static_cast<int>(program_.grid.size()), diags);
  if (!types) {
    std::string message =
        diags.all().empty() ? inst->name() + " has no result type" : diags.all().front().message;
    throw Error(message);
  }
  // The instruction table says how many names it takes: none with out=.
  const int grid_rank = static_cast<int>(program_.grid.size());
  const size_t count = out_operand(*inst) ? 0 : static_cast<size_t>(inst->def().result_count(grid_rank));
  if (names.size() != count) fail("{} defines {} values, got {} names", inst->name(), count, names.size());
  std::vector<Var> vars;
  for (size_t i = 0; i < names.size(); ++i) {
    check_new_name(names[i], "variable");
    vars.push_back(make_var(names[i], (*types)[i]));
  }
  for (const Var& v : vars) bind(v);
  append(std::make_shared<InstStmt>(vars, inst));
  return vars;
}

Var ProgramBuilder::dest_out(const Dest& dest, const char* instruction) const {
  if (!dest.out) {
    if (dest.name.empty()) fail("{} needs a result name or out(tensor)", instruction);
    return nullptr;
  }
  check_current(dest.out, "out");
  if (!dest.out->type.is_tensor() || dest.out->type.tensor->scope != Scope::Register) {
    fail("out of {} must be a register tensor, '{}' is {}", instruction, dest.out->name,
         to_string(dest.out->type));
  }
  return dest.out;
}

Tensor ProgramBuilder::emit_tensor(const Inst& inst, const Dest& dest) {
  if (dest.out) {
    emit(inst, {});
    return Tensor(dest.out);
  }
  return Tensor(emit(inst, {dest.name}).at(0));
}

std::vector<Scalar> ProgramBuilder::block_indices(const std::vector<std::string>& names) {
  if (!grid_set_) fail("BlockIndices before the grid is set: call grid() first");
  if (names.size() != program_.grid.size()) {
    fail("BlockIndices gives {} values (one per grid dimension), got {} names", program_.grid.size(),
         names.size());
  }
  std::vector<Scalar> out;
  for (const Var& v : emit(std::make_shared<BlockIndicesInst>(), names)) out.emplace_back(make_var_ref(v));
  return out;
}

Tensor ProgramBuilder::view_global(const std::string& name, const Pointer& ptr, DataType dtype,
                                   const std::vector<Scalar>& shape, const std::vector<Scalar>& strides) {
  check_current(ptr.var(), "the pointer");
  for (const Scalar& s : shape) check_expr(s.expr(), "a shape extent");
  for (const Scalar& s : strides) check_expr(s.expr(), "a stride");
  if (!strides.empty() && strides.size() != shape.size()) {
    fail("ViewGlobal has {} strides for a shape of rank {}", strides.size(), shape.size());
  }
  auto inst = std::make_shared<ViewGlobalInst>(make_var_ref(ptr.var()), dtype, exprs(shape), exprs(strides),
                                               std::nullopt);
  return Tensor(emit(inst, {name}).at(0));
}

Tensor ProgramBuilder::view_global(const std::string& name, const Pointer& ptr, DataType dtype,
                                   const std::vector<Scalar>& shape, const LayoutArg& layout) {
  check_current(ptr.var(), "the pointer");
  for (const Scalar& s : shape) check_expr(s.expr(), "a shape extent");
  auto inst = std::make_shared<ViewGlobalInst>(make_var_ref(ptr.var()), dtype, exprs(shape),
                                               std::vector<Expr>{}, layout.layout);
  return Tensor(emit(inst, {name}).at(0));
}

Tensor ProgramBuilder::view_global(const std::string& name, const Pointer& ptr, DataType dtype,
                                   const std::vector<Scalar>& shape, AutoLayout) {
  check_current(ptr.var(), "the pointer");
  for (const Scalar& s : shape) check_expr(s.expr(), "a shape extent");
  auto inst = std::make_shared<ViewGlobalInst>(make_var_ref(ptr.var()), dtype, exprs(shape),
                                               std::vector<Expr>{}, std::nullopt, SourceLoc{}, true);
  return Tensor(emit(inst, {name}).at(0));
}

Tensor ProgramBuilder::allocate_global(const std::string& name, DataType dtype,
                                       const std::vector<Scalar>& shape,
                                       const std::optional<layout::Layout>& layout,
                                       const std::optional<Scalar>& init) {
  for (const Scalar& s : shape) check_expr(s.expr(), "a shape extent");
  if (init) check_expr(init->expr(), "the init value");
  auto inst =
      std::make_shared<AllocateGlobalInst>(dtype, exprs(shape), layout, init ? init->expr() : nullptr);
  return Tensor(emit(inst, {name}).at(0));
}

Tensor ProgramBuilder::allocate_shared(const std::string& name, DataType dtype,
                                       const std::vector<Scalar>& shape) {
  for (const Scalar& s : shape) {
    if (!s.as_int()) fail("the shape of shared tensor '{}' must be constant", name);
  }
  return Tensor(emit(std::make_shared<AllocateSharedInst>(dtype, exprs(shape), std::nullopt), {name}).at(0));
}

Tensor ProgramBuilder::allocate_shared(const std::string& name, DataType dtype, const LayoutArg& layout) {
  if (layout.layout.num_threads() != 1) {
    fail("a shared layout has one thread, the layout of '{}' has {}", name, layout.layout.num_threads());
  }
  return Tensor(
      emit(std::make_shared<AllocateSharedInst>(dtype, std::vector<Expr>{}, layout.layout), {name}).at(0));
}

void ProgramBuilder::free_shared(const Tensor& t) {
  check_ref(t, "the operand of FreeShared", Scope::Shared);
  emit(std::make_shared<FreeSharedInst>(t.var()), {});
}

Tensor ProgramBuilder::allocate_register(const std::string& name, DataType dtype, const LayoutArg& layout,
                                         const std::optional<Scalar>& init) {
  if (init) check_expr(init->expr(), "the init value");
  return Tensor(
      emit(std::make_shared<AllocateRegisterInst>(dtype, layout.layout, init ? init->expr() : nullptr),
           {name})
          .at(0));
}

Tensor ProgramBuilder::load_global(const Dest& dest, const TensorRef& src, const LayoutArg& layout,
                                   const std::vector<Scalar>& offset) {
  check_ref(src, "the source of LoadGlobal", Scope::Global);
  check_offset(offset);
  Var o = dest_out(dest, "LoadGlobal");
  return emit_tensor(std::make_shared<LoadGlobalInst>(src.arg(), layout.layout, exprs(offset), o), dest);
}

Tensor ProgramBuilder::load_shared(const Dest& dest, const TensorRef& src, const LayoutArg& layout,
                                   const std::vector<Scalar>& offset) {
  check_ref(src, "the source of LoadShared", Scope::Shared);
  check_offset(offset);
  Var o = dest_out(dest, "LoadShared");
  return emit_tensor(std::make_shared<LoadSharedInst>(src.arg(), layout.layout, exprs(offset), o), dest);
}

void ProgramBuilder::store_global(const TensorRef& src, const TensorRef& dst,
                                  const std::vector<Scalar>& offset) {
  check_ref(src, "the source of StoreGlobal", Scope::Register);
  check_ref(dst, "the destination of StoreGlobal", Scope::Global);
  check_offset(offset);
  emit(std::make_shared<StoreGlobalInst>(src.arg(), dst.arg(), exprs(offset)), {});
}

Scalar ProgramBuilder::take_ticket(const std::string& name, const TensorRef& counter, const Scalar& modulo,
                                   const std::vector<Scalar>& offset) {
  check_ref(counter, "the counter of TakeTicket", Scope::Global);
  check_expr(modulo.expr(), "TakeTicket's modulo");
  check_offset(offset);
  const std::vector<Var> vars =
      emit(std::make_shared<TakeTicketInst>(counter.arg(), exprs(offset), modulo.expr()), {name});
  return Scalar(make_var_ref(vars.at(0)));
}

void ProgramBuilder::store_shared(const TensorRef& src, const TensorRef& dst,
                                  const std::vector<Scalar>& offset) {
  check_ref(src, "the source of StoreShared", Scope::Register);
  check_ref(dst, "the destination of StoreShared", Scope::Shared);
  check_offset(offset);
  emit(std::make_shared<StoreSharedInst>(src.arg(), dst.arg(), exprs(offset)), {});
}

void ProgramBuilder::atomic_add_global(const TensorRef& src, const TensorRef& dst,
                                       const std::vector<Scalar>& offset) {
  check_ref(src, "the source of AtomicAddGlobal", Scope::Register);
  check_ref(dst, "the destination of AtomicAddGlobal", Scope::Global);
  check_offset(offset);
  emit(std::make_shared<AtomicAddGlobalInst>(src.arg(), dst.arg(), exprs(offset)), {});
}

void ProgramBuilder::copy_async(const TensorRef& dst, const TensorRef& src) {
  check_ref(dst, "the destination of CopyAsync", Scope::Shared);
  check_ref(src, "the source of CopyAsync", Scope::Global);
  emit(std::make_shared<CopyAsyncInst>(dst.arg(), src.arg()), {});
}

Tensor ProgramBuilder::allocate_barrier(const std::string& name, int64_t count, int64_t n) {
  if (n < 1) fail("AllocateBarrier '{}' needs at least one barrier, got {}", name, n);
  return Tensor(
      emit(std::make_shared<AllocateBarrierInst>(count, std::vector<Expr>{Scalar(n).expr()}), {name}).at(0));
}

void ProgramBuilder::barrier_arrive(const TensorRef& barrier, const std::optional<Scalar>& tx,
                                    const std::optional<Scalar>& rank) {
  check_ref(barrier, "the barrier of BarrierArrive", Scope::Barrier);
  if (tx) check_expr(tx->expr(), "the tx byte count");
  if (rank) check_expr(rank->expr(), "the rank");
  emit(std::make_shared<BarrierArriveInst>(barrier.arg(), tx ? tx->expr() : Expr(), SourceLoc{},
                                           rank ? rank->expr() : Expr()),
       {});
}

void ProgramBuilder::barrier_wait(const TensorRef& barrier, const Scalar& parity) {
  check_ref(barrier, "the barrier of BarrierWait", Scope::Barrier);
  check_expr(parity.expr(), "the parity");
  emit(std::make_shared<BarrierWaitInst>(barrier.arg(), parity.expr()), {});
}

void ProgramBuilder::copy_tma(const TensorRef& dst, const TensorRef& src, const TensorRef& barrier,
                              const std::optional<Scalar>& multicast) {
  check_ref(dst, "the destination of CopyTma", Scope::Shared);
  check_ref(src, "the source of CopyTma", Scope::Global);
  check_ref(barrier, "the barrier of CopyTma", Scope::Barrier);
  if (multicast) check_expr(multicast->expr(), "the multicast mask");
  emit(std::make_shared<CopyTmaInst>(dst.arg(), src.arg(), barrier.arg(), SourceLoc{},
                                     multicast ? multicast->expr() : Expr()),
       {});
}

void ProgramBuilder::copy_async_commit_group() {
  emit(std::make_shared<CopyAsyncCommitGroupInst>(), {});
}

void ProgramBuilder::copy_async_wait_group(const Scalar& n) {
  if (!n.as_int()) fail("CopyAsyncWaitGroup needs a constant count");
  emit(std::make_shared<CopyAsyncWaitGroupInst>(n.expr()), {});
}

Tensor ProgramBuilder::cast(const Dest& dest, const TensorRef& src, DataType dtype) {
  check_ref(src, "the operand of Cast", Scope::Register);
  Var o = dest_out(dest, "Cast");
  return emit_tensor(std::make_shared<CastInst>(src.arg(), dtype, o), dest);
}

Tensor ProgramBuilder::cast(const Dest& dest, const TensorRef& src, DataType dtype, const LayoutArg& layout) {
  check_ref(src, "the operand of Cast", Scope::Register);
  Var o = dest_out(dest, "Cast");
  return emit_tensor(std::make_shared<CastInst>(src.arg(), dtype, o, SourceLoc{}, layout.layout), dest);
}

Tensor ProgramBuilder::view(const std::string& name, const TensorRef& src, DataType dtype) {
  check_ref(src, "the operand of View", Scope::Register);
  return Tensor(emit(std::make_shared<ViewInst>(src.arg(), dtype, std::nullopt), {name}).at(0));
}

Tensor ProgramBuilder::view(const std::string& name, const TensorRef& src, const LayoutArg& layout) {
  check_ref(src, "the operand of View", Scope::Register);
  return Tensor(emit(std::make_shared<ViewInst>(src.arg(), std::nullopt, layout.layout), {name}).at(0));
}

Tensor ProgramBuilder::view(const std::string& name, const TensorRef& src, DataType dtype,
                            const LayoutArg& layout) {
  check_ref(src, "the operand of View", Scope::Register);
  return Tensor(emit(std::make_shared<ViewInst>(src.arg(), dtype, layout.layout), {name}).at(0));
}

Tensor ProgramBuilder::dot(const Dest& dest, const TensorRef& a, const TensorRef& b, const TensorRef& c,
                           DotOptions options) {
  for (const auto& [ref, role] : {std::pair{&a, "operand a of Dot"}, std::pair{&b, "operand b of Dot"}}) {
    check_ref(*ref, role, std::nullopt);
    const Var& v = ref->var();
    if (v->type.tensor->scope != Scope::Register && v->type.tensor->scope != Scope::Shared)
      fail("{} must be a register or shared tensor, '{}' is {}", role, v->name, to_string(v->type));
  }
  check_ref(c, "operand c of Dot", Scope::Register);
  Var o = dest_out(dest, "Dot");
  return emit_tensor(std::make_shared<DotInst>(a.arg(), b.arg(), c.arg(), o, SourceLoc{}, options.transpose_a,
                                               options.transpose_b),
                     dest);
}

void ProgramBuilder::dot_async(const TensorRef& a, const TensorRef& b, const TensorRef& c,
                               DotOptions options) {
  check_ref(a, "operand a of DotAsync", std::nullopt);  // shared, or registers (the RS form)
  check_ref(b, "operand b of DotAsync", Scope::Shared);
  check_ref(c, "operand c of DotAsync", Scope::Register);
  emit(std::make_shared<DotAsyncInst>(a.arg(), b.arg(), c.arg(), options.transpose_a, options.transpose_b),
       {});
}

void ProgramBuilder::store_tma(const TensorRef& src, const TensorRef& dst) {
  check_ref(src, "the source of StoreTma", Scope::Shared);
  check_ref(dst, "the destination of StoreTma", Scope::Global);
  emit(std::make_shared<StoreTmaInst>(src.arg(), dst.arg()), {});
}

void ProgramBuilder::store_tma_wait(int64_t pending) {
  emit(std::make_shared<StoreTmaWaitInst>(pending), {});
}

void ProgramBuilder::dot_async_wait(int64_t pending) {
  emit(std::make_shared<DotAsyncWaitInst>(pending), {});
}

Tensor ProgramBuilder::elementwise(const Dest& dest, ElementwiseOp op, const std::vector<Arg>& args) {
  if (static_cast<int>(args.size()) != arity(op)) {
    fail("{} takes {} operands, got {}", to_string(op), arity(op), args.size());
  }
  std::vector<Operand> ops;
  for (const Arg& a : args) {
    if (a.operand.tensor) {
      check_ref(TensorRef(*a.operand.tensor), "an operand", Scope::Register);
    } else {
      check_expr(a.operand.scalar, "a scalar operand");
    }
    ops.push_back(a.operand);
  }
  Var o = dest_out(dest, to_string(op));
  return emit_tensor(std::make_shared<ElementwiseInst>(op, std::move(ops), o), dest);
}

Tensor ProgramBuilder::reduce(const Dest& dest, ReduceOp op, const TensorRef& src, int dim, bool keepdim) {
  check_ref(src, "the operand of a reduction", Scope::Register);
  Var o = dest_out(dest, to_string(op));
  return emit_tensor(std::make_shared<ReduceInst>(op, src.arg(), dim, keepdim, o), dest);
}

void ProgramBuilder::synchronize() {
  emit(std::make_shared<SynchronizeInst>(), {});
}

void ProgramBuilder::cluster_sync() {
  emit(std::make_shared<ClusterSyncInst>(), {});
}

void ProgramBuilder::exit() {
  emit(std::make_shared<ExitInst>(), {});
}

void ProgramBuilder::print(const Arg& value) {
  if (value.operand.tensor) {
    check_ref(TensorRef(*value.operand.tensor), "the operand of Print", std::nullopt);
  } else {
    check_expr(value.operand.scalar, "the operand of Print");
  }
  emit(std::make_shared<PrintInst>(value.operand), {});
}

}  // namespace tilevm::ir
