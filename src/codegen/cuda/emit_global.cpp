// Global tensors: ViewGlobal (a pointer parameter with a shape and strides or a layout), AllocateGlobal (a
// tensor in the launch's workspace, shared by every block as in the interpreter) and AtomicAddGlobal.
// LoadGlobal and StoreGlobal are in memory_access.cpp with their shared-memory twins.
#include <fmt/format.h>

#include "emitter.h"
#include "tilevm/support/error.h"

namespace tilevm::codegen::cuda {

namespace {

// Shapes and strides that are not constants are captured in variables when the instruction runs: scalars
// may change later, the tensor's shape may not.
CExpr capture(Emitter& e, const CExpr& x, const std::string& name) {
  if (x.value) return x;
  const std::string v = e.fresh(name);
  e.decls_.push_back(fmt::format("long long {} = 0;", v));
  e.line(fmt::format("{} = {};", v, x.text));
  return cvar(v);
}

}  // namespace

void Emitter::emit_view_global(const ir::InstStmt& s, const ir::ViewGlobalInst& n) {
  if (s.results.empty()) return;
  const ir::Var& var = s.results[0];
  const auto* ref = n.ptr->as<ir::VarRef>();
  if (!ref) unsupported(s, "ViewGlobal needs a pointer parameter");
  if (n.auto_layout) unsupported(s, "layout=auto is chosen by lowering (transform::lower), not yet here");
  global_view_insts_[var.get()] = &n;
  MemTensor m;
  m.scope = ir::Scope::Global;
  m.dtype = n.dtype;
  m.ptr = "((tv_u8*)" + scalar_name(ref->var) + ")";
  bool tiled = false;  // a layout of the tensor's own (constant) shape is one tile
  for (size_t d = 0; n.layout && d < n.shape.size(); ++d)
    tiled = tiled || d >= n.layout->shape().size() || ir::as_const_int(n.shape[d]) != n.layout->shape()[d];
  if (n.layout && !tiled) {
    m.layout = *n.layout;
    for (int64_t e : n.layout->shape()) m.shape.push_back(cconst(e));
  } else if (n.layout) {
    // Tiles of the layout's shape in a row-major grid: the tile strides from the tile counts per dimension.
    m.layout = *n.layout;
    const layout::Index& tile = n.layout->shape();
    for (size_t d = 0; d < n.shape.size(); ++d)
      m.shape.push_back(capture(*this, int_expr(n.shape[d]), fmt::format("{}_shape{}", var->name, d)));
    m.tile_strides.assign(m.shape.size(), cconst(n.layout->num_locals()));
    for (size_t d = m.shape.size(); d-- > 1;) {
      const CExpr tiles = (m.shape[d] + cconst(tile[d] - 1)) / cconst(tile[d]);
      m.tile_strides[d - 1] = m.tile_strides[d] * tiles;
      if (!m.tile_strides[d - 1].value)
        m.tile_strides[d - 1] =
            capture(*this, m.tile_strides[d - 1], fmt::format("{}_tile_stride{}", var->name, d - 1));
    }
  } else {
    for (size_t d = 0; d < n.shape.size(); ++d)
      m.shape.push_back(capture(*this, int_expr(n.shape[d]), fmt::format("{}_shape{}", var->name, d)));
    if (!n.strides.empty()) {
      for (size_t d = 0; d < n.strides.size(); ++d)
        m.strides.push_back(capture(*this, int_expr(n.strides[d]), fmt::format("{}_stride{}", var->name, d)));
    } else {
      m.strides.assign(m.shape.size(), cconst(1));
      for (size_t d = m.shape.size(); d-- > 1;) {
        m.strides[d - 1] = m.strides[d] * m.shape[d];
        if (!m.strides[d - 1].value)
          m.strides[d - 1] = capture(*this, m.strides[d - 1], fmt::format("{}_stride{}", var->name, d - 1));
      }
    }
  }
  mems_[var.get()] = m;
}

void Emitter::emit_allocate_global(const ir::InstStmt& s, const ir::AllocateGlobalInst& n) {
  if (s.results.empty()) return;
  const ir::Var& var = s.results[0];
  MemTensor m;
  m.scope = ir::Scope::Global;
  m.dtype = n.dtype;
  CExpr elements = cconst(1);
  if (n.layout) {
    m.layout = *n.layout;
    for (int64_t e : n.layout->shape()) m.shape.push_back(cconst(e));
    elements = cconst(n.layout->num_locals());
  } else {
    for (const ir::Expr& e : n.shape) m.shape.push_back(int_expr(e));
    m.strides.assign(m.shape.size(), cconst(1));
    for (size_t d = m.shape.size(); d-- > 1;) m.strides[d - 1] = m.strides[d] * m.shape[d];
    for (const CExpr& e : m.shape) elements = elements * e;
  }
  // Workspace tensors follow each other at 256-byte boundaries, in program order (gpu_runner.cpp computes the
  // same offsets on the host to size and initialize the workspace).
  const std::string offset = workspace_end_;
  const std::string bytes = fmt::format("(((tv_i64){} * {} + 7) / 8)", elements.text, n.dtype.bits());
  workspace_end_ = fmt::format("(({} + {} + 255) / 256 * 256)", offset, bytes);
  m.ptr = fmt::format("((tv_u8*)tv_workspace + {})", offset);
  workspace_.push_back({&n, var->name});
  mems_[var.get()] = m;
  note(s, fmt::format("workspace tensor {} at byte offset {}", workspace_.size() - 1, offset));
}

void Emitter::emit_atomic_add(const ir::InstStmt& s, const ir::StoreInst& n) {
  const RegInfo& src = reg_arg(n.src);
  const MemTensor& m = mem(n.dst.tensor);
  const DataType dt = m.dtype;
  const int B = dt.bits();
  std::string add;  // of the element code `c` at element offset `off`
  if (dt == DataType::f32()) {
    add = fmt::format("atomicAdd((float*){} + off, __int_as_float((int)c));", m.ptr);
  } else if (dt == DataType::f64()) {
    add = fmt::format("atomicAdd((double*){} + off, __longlong_as_double((long long)c));", m.ptr);
  } else if (dt.is_integer() && B == 32) {
    add = fmt::format("atomicAdd((unsigned int*){} + off, (unsigned int)c);", m.ptr);
  } else if (dt.is_integer() && B == 64) {
    add = fmt::format("atomicAdd((unsigned long long*){} + off, (unsigned long long)c);", m.ptr);
  } else if (B <= 32) {
    add = fmt::format("tv_atomic_add<{}>({}, off, c);", type_args(dt), m.ptr);
  } else {
    unsupported(s, fmt::format("AtomicAddGlobal of {}", dt.name()));
  }
  note(s,
       fmt::format("per-element atomics ({}), one replica per element",
                   B <= 32 && !(dt == DataType::f32()) && !(dt.is_integer() && B == 32) ? "compare-and-swap"
                                                                                        : "native"));
  open("");
  open(fmt::format("if ({})", primary_replica(src.layout, cvar("t"))));
  line("#pragma unroll");
  open(fmt::format("for (int i = 0; i < {}; ++i)", src.layout.num_locals()));
  const ElementAccess a = access(m, n.dst, n.offset, layout_index(src.layout, cvar("t"), cvar("i")));
  line(fmt::format("const tv_i64 off = {};", a.offset.text));
  line(fmt::format("const tv_u64 c = tv_get<{}>({}, i);", B, src.name));
  line(a.inside == "1" ? add : fmt::format("if ({}) {}", a.inside, add));
  line("(void)c;");
  close();
  close();
  close();
}

// Thread 0 takes the ticket between two block barriers. The first orders every thread's earlier global
// stores before thread 0's fence, so the fence releases them with the atomic; the fence after the atomic
// and the second barrier make every thread see what the blocks with earlier tickets released (the
// threadfence-reduction pattern of the CUDA programming guide). atomicInc wraps the counter to 0 after
// modulo - 1, so a launch in which all of its blocks take their tickets leaves it as it found it.
void Emitter::emit_take_ticket(const ir::InstStmt& s, const ir::TakeTicketInst& n) {
  const MemTensor& m = mem(n.counter.tensor);
  const std::string sc = scratch(4);
  note(s, "atomicInc by thread 0 between two block barriers, the ticket through 4 bytes of shared scratch");
  open("");
  line("__syncthreads();");
  open("if (t == 0)");
  const ElementAccess a = access(m, n.counter, n.offset, {});
  line("unsigned int tv_ticket = 0u;");
  line("__threadfence();  // the block's global stores, ordered before this thread by the barrier");
  line(fmt::format("{}tv_ticket = atomicInc((unsigned int*){} + ({}), (unsigned int)({}) - 1u);",
                   a.inside == "1" ? "" : fmt::format("if ({}) ", a.inside), m.ptr, a.offset.text,
                   expr(n.modulo)));
  line("__threadfence();  // what the blocks with earlier tickets stored, before this block reads it");
  line(fmt::format("*(volatile int*){} = (int)tv_ticket;", sc));
  close();
  line("__syncthreads();");
  if (!s.results.empty() && s.results[0])
    line(fmt::format("{} = *(volatile int*){};", scalar_name(s.results[0]), sc));
  close();
}

}  // namespace tilevm::codegen::cuda
