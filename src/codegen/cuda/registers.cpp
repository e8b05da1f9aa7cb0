// Register tensors. Every register tensor is one per-thread array of 32-bit words holding the thread's
// elements as a packed little-endian bit stream in slot order: slot i of a b-bit type is bits
// [i*b, (i+1)*b) (the prelude's tv_get/tv_set). This is exactly View's semantics (docs/language.md section
// 5), so View is a copy of words that the compiler removes, and 16-bit pairs, int8 quadruples and f32 values
// sit in the words exactly as mma.sync and ldmatrix want their registers.
#include <fmt/format.h>

#include "emitter.h"
#include "tilevm/support/error.h"

namespace tilevm::codegen::cuda {

namespace {

// The code of a scalar stored as an element of `t` (interp scalar_to_code: floats round, integers wrap).
std::string scalar_code(Emitter& e, DataType t, const ir::Expr& value) {
  if (value->type.is_float()) return fmt::format("tv_round<{}>((double)({}))", type_args(t), e.expr(value));
  return fmt::format("tv_wrap<{}>((tv_i64)({}))", type_args(t), e.expr(value));
}

}  // namespace

void Emitter::emit_allocate_register(const ir::InstStmt& s, const ir::AllocateRegisterInst& n) {
  if (s.results.empty()) return;
  const RegInfo& r = reg(s.results[0]);
  if (!n.init) {
    line("// uninitialized");
    return;
  }
  const auto zero = ir::as_const_int(n.init);
  const auto* f = n.init->as<ir::FloatImm>();
  if ((zero && *zero == 0) || (f && f->value == 0.0 && !std::signbit(f->value))) {
    line("#pragma unroll");
    line(fmt::format("for (int w = 0; w < {}; ++w) {}[w] = 0u;", r.words, r.name));
    return;
  }
  open("");
  line(fmt::format("const tv_u64 c = {};", scalar_code(*this, r.dtype, n.init)));
  line("#pragma unroll");
  line(fmt::format("for (int i = 0; i < {}; ++i) tv_set<{}>({}, i, c);", r.layout.num_locals(),
                   r.dtype.bits(), r.name));
  close();
}

void Emitter::emit_iota(const ir::InstStmt& s, const ir::IotaInst& n) {
  if (s.results.empty()) return;
  const RegInfo& r = reg(s.results[0]);
  // Slot i of thread t holds the element f(t, i); its index along `dim` is the value (a constant-folded
  // expression of t once the loop unrolls).
  const std::vector<CExpr> idx = layout_index(r.layout, cvar("t"), cvar("i"));
  line("#pragma unroll");
  line(fmt::format("for (int i = 0; i < {}; ++i) tv_set<{}>({}, i, (tv_u64)(long long)({}));",
                   r.layout.num_locals(), r.dtype.bits(), r.name, idx[static_cast<size_t>(n.dim)].text));
}

void Emitter::emit_view(const ir::InstStmt& s, const ir::ViewInst& n) {
  if (s.results.empty()) return;
  const RegInfo& src = reg_arg(n.src);
  const RegInfo& out = reg(s.results[0]);
  if (out.words != src.words)
    unsupported(s, fmt::format("View of {} words as {} words", src.words, out.words));
  note(s, "the same words, retyped (no data moves)");
  line("#pragma unroll");
  line(fmt::format("for (int w = 0; w < {}; ++w) {}[w] = {}[w];", out.words, out.name, src.name));
}

std::vector<int64_t> Emitter::operand_slots(const ir::TensorArg& a, const RegInfo& out) {
  const RegInfo& r = reg_arg(a);
  std::vector<int64_t> table(static_cast<size_t>(out.layout.num_locals()), -1);
  if (r.layout == out.layout) {
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int64_t>(i);
    return table;
  }
  // Broadcast: the slot of the operand that holds, in the same thread, the element result slot i needs. It
  // must not depend on the thread (true for the layouts reduce and keepdim produce).
  const layout::Index& os = r.layout.shape();
  const layout::Index& shape = out.layout.shape();
  const size_t lead = static_cast<size_t>(out.layout.rank()) - os.size();
  // Tabulated, not asked per element (Layout::owners allocates; a GEMM epilogue's broadcast asked it for
  // every element of the tile): the operand's slot holding each of its elements in each of its threads, and
  // every (t, i) of the result as a row-major offset (layout.h: row_major_offsets).
  // A table past 2^22 entries (an operand as large as the result in another layout, which fails below
  // anyway) is not built: owners answers then, element by element.
  const int64_t rt = r.layout.num_threads(), rm = r.layout.num_locals(), rn = r.layout.num_elements();
  const bool tabulate = rt * rn <= (int64_t{1} << 22);
  std::vector<int32_t> slot_of(tabulate ? static_cast<size_t>(rt * rn) : 0, -1);  // [t * rn + offset]
  if (tabulate) {
    const std::vector<int64_t> offsets = layout::row_major_offsets(r.layout);
    for (int64_t t = 0; t < rt; ++t)
      for (int64_t i = rm; i-- > 0;)  // the lowest slot where a thread holds an element twice
        slot_of[static_cast<size_t>(t * rn + offsets[static_cast<size_t>(t * rm + i)])] =
            static_cast<int32_t>(i);
  }
  auto slot_in = [&](int64_t t, int64_t offset) -> int64_t {
    if (t >= rt) return -1;
    if (tabulate) return slot_of[static_cast<size_t>(t * rn + offset)];
    layout::Index oi(os.size());
    for (size_t d = os.size(); d-- > 0;) oi[d] = offset % os[d], offset /= os[d];
    for (const auto& [ot, slot] : r.layout.owners(oi))
      if (ot == t) return slot;
    return -1;
  };
  const std::vector<int64_t> result_offsets = layout::row_major_offsets(out.layout);
  for (int64_t t = 0; t < out.layout.num_threads(); ++t) {
    for (int64_t i = 0; i < out.layout.num_locals(); ++i) {
      // The result's index, the operand's (its broadcast dimensions at 0) as a row-major offset.
      int64_t rest = result_offsets[static_cast<size_t>(t * out.layout.num_locals() + i)], offset = 0,
              stride = 1;
      for (size_t d = shape.size(); d-- > 0;) {
        const int64_t x = rest % shape[d];
        rest /= shape[d];
        if (d < lead) continue;
        const int64_t e = os[d - lead];
        offset += (e == 1 ? 0 : x) * stride;
        stride *= e;
      }
      const int64_t slot = slot_in(t, offset);
      int64_t& cell = table[static_cast<size_t>(i)];
      if (slot < 0 || (cell >= 0 && cell != slot)) {
        unsupported(*current_, fmt::format("the broadcast of '{}' needs a slot that depends on the thread",
                                           a.tensor->name));
      }
      cell = slot;
    }
  }
  return table;
}

std::string Emitter::operand_code(const ir::TensorArg& a, const RegInfo& out, const std::string& slot,
                                  SourceLoc) {
  const RegInfo& r = reg_arg(a);
  const int B = r.dtype.bits();
  if (r.layout == out.layout) return fmt::format("tv_get<{}>({}, {})", B, r.name, slot);
  // A broadcast reads through a table of slots, which folds away once the slot loop is unrolled.
  const std::vector<int64_t> table = operand_slots(a, out);
  const std::string name = fresh("bcast_" + a.tensor->name);
  std::string init;
  for (int64_t v : table) init += (init.empty() ? "" : ", ") + std::to_string(v);
  line(fmt::format("const int {}[{}] = {{{}}};", name, table.size(), init));
  return fmt::format("tv_get<{}>({}, {}[{}])", B, r.name, name, slot);
}

}  // namespace tilevm::codegen::cuda
