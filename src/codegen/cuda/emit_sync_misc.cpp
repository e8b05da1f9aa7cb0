// Print(x) on the GPU: thread 0 of each block prints with printf, in the interpreter's format (interp/
// print.cpp: `name = value` for scalars; a header line and one line per row for tensors; every line
// prefixed with `block [b0, b1]: ` in a grid of several blocks). Register tensors are gathered through shared
// scratch memory first. Values print with %.17g (the interpreter prints the shortest round-trip decimal, so
// the text can differ in the last digits; the values are the same). Synchronize and Exit are emitted inline
// by kernel_emitter.cpp.
#include <fmt/format.h>

#include "emitter.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/support/error.h"

namespace tilevm::codegen::cuda {

namespace {

std::string format_of(DataType t) {
  return t.is_float() ? "%.17g" : "%lld";
}
std::string value_of(DataType t, const std::string& code) {
  if (t.is_float()) return fmt::format("tv_decode<{}>({})", type_args(t), code);
  return fmt::format("(long long)tv_to_int<{}, {}>({})",
                     t.is_bool()                       ? 0
                     : t.kind() == TypeKind::SignedInt ? 1
                                                       : 2,
                     t.bits(), code);
}
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '%') out += '%';
    out += c;
  }
  return out;
}

}  // namespace

void Emitter::emit_print(const ir::InstStmt& s, const ir::PrintInst& n) {
  const std::string prefix =
      "if (gridDim.x * gridDim.y * gridDim.z > 1) printf(\"block [%d, %d, %d]: \", (int)blockIdx.x, "
      "(int)blockIdx.y, (int)blockIdx.z);";
  if (!n.value.is_tensor()) {
    const ir::Expr& e = n.value.scalar;
    const auto* ref = e->as<ir::VarRef>();
    const std::string name = ref ? ref->var->name : "value";
    note(s, "printf from thread 0");
    open("if (t == 0)");
    line(prefix);
    if (e->type.is_bool()) {
      line(fmt::format("printf(\"{} = %s\\n\", ({}) ? \"True\" : \"False\");", escape(name), expr(e)));
    } else if (e->type.is_float()) {
      line(fmt::format("printf(\"{} = %.17g\\n\", (double)({}));", escape(name), expr(e)));
    } else {
      line(fmt::format("printf(\"{} = %lld\\n\", (long long)({}));", escape(name), expr(e)));
    }
    close();
    return;
  }
  const ir::TensorArg& arg = *n.value.tensor;
  const ir::TensorType& type = arg.type();
  if (type.scope != ir::Scope::Register) {
    // Shared and global views: thread 0 reads the elements itself (global elements outside read 0).
    const MemTensor& m = mem(arg.tensor);
    layout::Index tile;
    for (size_t d = 0; d < m.shape.size(); ++d) {
      if (d < arg.slices.size() && arg.slices[d].kind == ir::Slice::Kind::Index) continue;
      if (!m.shape[d].value) unsupported(s, "Print of a global tensor whose shape is not a constant");
      tile.push_back(*m.shape[d].value);
    }
    const int64_t row = tile.empty() ? 1 : tile.back();
    int64_t elements = 1;
    for (int64_t e : tile) elements *= e;
    note(s, "printf from thread 0");
    line("__syncthreads();");
    open("if (t == 0)");
    line(prefix);
    line(fmt::format("printf(\"{}: {} {}{}\\n\");", escape(arg.tensor->name),
                     m.scope == ir::Scope::Shared ? "shared" : "global", m.dtype.name(),
                     escape(fmt::format("[{}]", fmt::join(tile, ", ")))));
    open(fmt::format("for (int l = 0; l < {}; ++l)", elements));
    std::vector<CExpr> idx(tile.size(), cconst(0));
    CExpr rest = cvar("l");
    for (size_t d = tile.size(); d-- > 0;) {
      idx[d] = d == 0 ? rest : rest % cconst(tile[d]);
      rest = rest / cconst(tile[d]);
    }
    const ElementAccess a = access(m, arg, {}, idx);
    open(fmt::format("if (l % {} == 0)", row));
    line(fmt::format("if (l > 0) printf(\"\\n\");"));
    line(prefix);
    line(fmt::format("printf(\"  [%d, :]\", l / {});", row));
    close();
    line(fmt::format("printf(\" {}\", {});", format_of(m.dtype),
                     value_of(m.dtype, fmt::format("(({}) ? tv_ld<{}>({}, {}) : 0ull)", a.inside,
                                                   m.dtype.bits(), m.ptr, a.offset.text))));
    close();
    line("printf(\"\\n\");");
    close();
    line("__syncthreads();");
    return;
  }
  const RegInfo& r = reg_arg(arg);
  const layout::Index& shape = r.layout.shape();
  const int64_t elements = r.layout.num_elements();
  const int64_t row = shape.empty() ? 1 : shape.back();
  const std::string vt = r.dtype.is_float() ? "double" : "long long";
  const std::string sc = scratch(elements * 8);
  note(s, "gathered through shared scratch, printf from thread 0");
  open("");
  line(fmt::format("{}* sc = ({}*){};", vt, vt, sc));
  line("__syncthreads();");
  CExpr lin = cconst(0);
  const std::vector<CExpr> idx = layout_index(r.layout, cvar("t"), cvar("i"));
  for (size_t d = 0; d < shape.size(); ++d) lin = lin * cconst(shape[d]) + idx[d];
  line("#pragma unroll");
  line(fmt::format("for (int i = 0; i < {}; ++i) sc[{}] = {};", r.layout.num_locals(), lin.text,
                   value_of(r.dtype, fmt::format("tv_get<{}>({}, i)", r.dtype.bits(), r.name))));
  line("__syncthreads();");
  open("if (t == 0)");
  line(prefix);
  line(fmt::format("printf(\"{}: register {}[{}] layout={}\\n\");", escape(arg.tensor->name), r.dtype.name(),
                   fmt::format("{}", fmt::join(shape, ", ")), escape(layout::print_layout(r.layout))));
  open(fmt::format("for (int l = 0; l < {}; ++l)", elements));
  open(fmt::format("if (l % {} == 0)", row));
  line("if (l > 0) printf(\"\\n\");");
  line(prefix);
  line(fmt::format("printf(\"  [%d, :]\", l / {});", row));
  close();
  line(fmt::format("printf(\" {}\", sc[l]);", format_of(r.dtype)));
  close();
  line("printf(\"\\n\");");
  close();
  line("__syncthreads();");
  close();
}

}  // namespace tilevm::codegen::cuda
