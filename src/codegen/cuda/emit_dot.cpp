// Dot(a, b, c): d = a @ b + c.
//
// Tensor cores when target::select_mma (target/mma_selection.h, the rule the verifier follows too) finds an
// mma.sync atom whose fragments a, b and c divide, held by every warp in the same slots: the quotients say
// which atoms each warp holds in which slots (thread t = 32 * warp + lane); leading batch dimensions are
// typically spread over warps (each warp its own product, e.g. a split of K). The emitted loop walks the
// selection's steps, so registers are named by constants. The fragments are the register words themselves
// (registers.cpp). The hardware accumulates in the accumulator type, so results differ from the
// interpreter's exact sum by rounding.
//
// Otherwise (SIMT, any layouts, including a selection that is held but not warp-uniform): a and b go through
// shared scratch memory as doubles (64-bit integers for integer dots) and each thread computes its own result
// elements left to right, exactly as the interpreter.
#include <fmt/format.h>

#include "emitter.h"
#include "tilevm/support/error.h"
#include "tilevm/target/mma_selection.h"

namespace tilevm::codegen::cuda {

namespace {

const char* ptx_type(DataType t) {
  if (t == DataType::f16()) return "f16";
  if (t == DataType::bf16()) return "bf16";
  if (t == DataType::f32()) return "f32";
  if (t == DataType::i32()) return "s32";
  if (t == DataType::i8()) return "s8";
  if (t == DataType::u8()) return "u8";
  return "?";
}

}  // namespace

bool Emitter::try_mma(const ir::DotInst&, const RegInfo& a, const RegInfo& b, const RegInfo& c,
                      const RegInfo& d) {
  // Leading (batch) dimensions are allowed (the verifier makes them equal in a, b and c): the atoms divide
  // the last two dimensions (divide prepends 1s to the atom's rank).
  const int rank = c.layout.rank();
  if (rank < 2 || a.layout.rank() != rank || b.layout.rank() != rank) return false;
  const std::optional<target::MmaSelection> sel =
      target::select_mma(a.dtype, b.dtype, c.dtype, a.layout, b.layout, c.layout);
  if (!sel || !sel->warp_uniform) return false;
  const target::MmaAtom& atom = *sel->atom;
  const int64_t warps = sel->qc.num_threads();
  const std::vector<std::array<int64_t, 3>>& steps = sel->steps;
  const int wa = static_cast<int>(atom.layout_a.num_locals() * a.dtype.bits() / 32);
  const int wb = static_cast<int>(atom.layout_b.num_locals() * b.dtype.bits() / 32);
  const int wc = static_cast<int>(atom.layout_c.num_locals() * c.dtype.bits() / 32);
  const std::string inst =
      fmt::format("mma.sync.aligned.m{}n{}k{}.row.col.{}.{}.{}.{}", atom.m, atom.n, atom.k, ptx_type(c.dtype),
                  ptx_type(a.dtype), ptx_type(b.dtype), ptx_type(c.dtype));
  note(*current_, fmt::format("{} x {} per warp ({})", inst, steps.size(),
                              warps > 1 ? "warp-uniform schedule" : "one warp"));
  open("");
  if (d.name != c.name) {
    line("#pragma unroll");
    line(fmt::format("for (int w = 0; w < {}; ++w) {}[w] = {}[w];", d.words, d.name, c.name));
  }
  // Operand lists: %0.. the accumulator (in and out), then a, then b.
  std::string ops;
  int k = 0;
  auto list = [&](int count) {
    std::string s = "{";
    for (int x = 0; x < count; ++x) s += fmt::format("{}%{}", x ? ", " : "", k++);
    return s + "}";
  };
  const std::string dl = list(wc), al = list(wa), bl = list(wb);
  line(fmt::format("// (c slot, a slot, b slot) per step; one {}x{}x{} atom each", atom.m, atom.n, atom.k));
  std::string table;
  for (const auto& st : steps)
    table += fmt::format("{}{{{}, {}, {}}}", table.empty() ? "" : ", ", st[0], st[1], st[2]);
  line(fmt::format("const int steps[{}][3] = {{{}}};", steps.size(), table));
  line("#pragma unroll");
  open(fmt::format("for (int s = 0; s < {}; ++s)", steps.size()));
  line("const int cs = steps[s][0], as = steps[s][1], bs = steps[s][2];");
  std::string outs, ins;
  for (int x = 0; x < wc; ++x)
    outs += fmt::format("{}\"+r\"({}[cs * {} + {}])", x ? ", " : "", d.name, wc, x);
  for (int x = 0; x < wa; ++x) ins += fmt::format("{}\"r\"({}[as * {} + {}])", x ? ", " : "", a.name, wa, x);
  for (int x = 0; x < wb; ++x) ins += fmt::format(", \"r\"({}[bs * {} + {}])", b.name, wb, x);
  // Not volatile: a register-only instruction the compiler may schedule around the loads.
  line(fmt::format("asm(\"{} {}, {}, {}, {};\\n\" : {} : {});", inst, dl, al, bl, dl, outs, ins));
  close();
  close();
  return true;
}

void Emitter::emit_dot(const ir::InstStmt& s, const ir::DotInst& n) {
  const RegInfo& c = reg_arg(n.c);
  const RegInfo& d = reg(n.out ? n.out : s.results.at(0));
  const bool shared_a = n.a.tensor->type.tensor->scope == ir::Scope::Shared;
  const bool shared_b = n.b.tensor->type.tensor->scope == ir::Scope::Shared;
  std::string why;
  if (shared_a || shared_b) {
    if (const std::optional<WgmmaPlan> plan = wgmma_plan(n.a, n.b, c, n.transpose_a, n.transpose_b, &why)) {
      if (d.name != c.name) {
        line("#pragma unroll");
        line(fmt::format("for (int w = 0; w < {}; ++w) {}[w] = {}[w];", d.words, d.name, c.name));
      }
      emit_wgmma(s, *plan, n.a, n.b, d, false);
      return;
    }
  }
  // A register operand's transpose is its layout's (the same registers); a shared one is read transposed
  // below.
  auto operand = [&](const ir::TensorArg& arg, bool shared, bool transpose) {
    if (shared) {
      const MemTensor& m = mem(arg.tensor);
      RegInfo r;
      r.dtype = m.dtype;
      const layout::Index& full = m.layout->shape();
      layout::Index shape{full[full.size() - 2], full.back()};
      if (transpose) std::swap(shape[0], shape[1]);
      r.layout = layout::local(shape);  // stands for the shape only
      return r;
    }
    RegInfo r = reg_arg(arg);
    if (transpose) {
      std::vector<int> perm(static_cast<size_t>(r.layout.rank()));
      for (size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<int>(k);
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      r.layout = layout::permute_dims(r.layout, perm);
    }
    return r;
  };
  const RegInfo a = operand(n.a, shared_a, n.transpose_a);
  const RegInfo b = operand(n.b, shared_b, n.transpose_b);
  if (!shared_a && !shared_b && try_mma(n, a, b, c, d)) return;
  const layout::Index &as = a.layout.shape(), &bs = b.layout.shape(), &cs = c.layout.shape();
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  auto batch = [](const layout::Index& x) {
    int64_t p = 1;
    for (size_t i = 0; i + 2 < x.size(); ++i) p *= x[i];
    return p;
  };
  const int64_t Ba = batch(as), Bb = batch(bs);
  const bool integer = !a.dtype.is_float() && !b.dtype.is_float() && !c.dtype.is_float();
  const std::string vt = integer ? "tv_i64" : "double";
  const int64_t a_elems = Ba * M * K, b_elems = Bb * K * N;
  const std::string sc = scratch((a_elems + b_elems) * 8);
  note(s, fmt::format("SIMT through {} bytes of shared scratch ({})", (a_elems + b_elems) * 8,
                      shared_a || shared_b ? "a shared operand without a wgmma form: " + why
                                           : "the layouts divide no mma atom warp-uniformly"));
  auto value_of = [&](DataType t, const std::string& code) {
    if (!integer) return fmt::format("tv_decode<{}>({})", type_args(t), code);
    return fmt::format("tv_to_int<{}, {}>({})",
                       t.is_bool()                       ? 0
                       : t.kind() == TypeKind::SignedInt ? 1
                                                         : 2,
                       t.bits(), code);
  };
  auto linear = [&](const layout::Index& shape, const std::vector<CExpr>& idx) {
    CExpr l = cconst(0);
    for (size_t k = 0; k < shape.size(); ++k) l = l * cconst(shape[k]) + idx[k];
    return l;
  };
  open("");
  line(fmt::format("{}* sa = ({}*){};", vt, vt, sc));
  line(fmt::format("{}* sb = sa + {};", vt, a_elems));
  line("__syncthreads();  // the scratch may still be read by an earlier instruction");
  // Each operand into the scratch as [batch, rows, cols] after its transpose: a register operand by its
  // holders, a shared one by every thread in turn (element e of the tile's storage order).
  auto fill = [&](const ir::TensorArg& arg, bool shared, bool transpose, const RegInfo& r, const char* dst) {
    const layout::Index& shape = r.layout.shape();
    if (!shared) {
      line("#pragma unroll");
      line(fmt::format("for (int i = 0; i < {}; ++i) {}[{}] = {};", r.layout.num_locals(), dst,
                       linear(shape, layout_index(r.layout, cvar("t"), cvar("i"))).text,
                       value_of(r.dtype, fmt::format("tv_get<{}>({}, i)", r.dtype.bits(), r.name))));
      return;
    }
    const MemTensor& m = mem(arg.tensor);
    const int64_t rows = shape[0], cols = shape[1];
    open(fmt::format("for (int e = t; e < {}; e += {})", rows * cols, threads_));
    line(fmt::format("const int i = e / {}, j = e % {};", cols, cols));
    // (i, j) of op(x); the stored tile is op(x) transposed back when asked.
    const std::vector<CExpr> idx =
        transpose ? std::vector<CExpr>{cvar("j"), cvar("i")} : std::vector<CExpr>{cvar("i"), cvar("j")};
    const ElementAccess at = access(m, arg, {}, idx);
    line(fmt::format(
        "{}[e] = {};", dst,
        value_of(r.dtype, fmt::format("tv_ld<{}>({}, {})", r.dtype.bits(), m.ptr, at.offset.text))));
    close();
  };
  fill(n.a, shared_a, n.transpose_a, a, "sa");
  fill(n.b, shared_b, n.transpose_b, b, "sb");
  line("__syncthreads();");
  line("#pragma unroll");
  open(fmt::format("for (int i = 0; i < {}; ++i)", c.layout.num_locals()));
  const std::vector<CExpr> ci = layout_index(c.layout, cvar("t"), cvar("i"));
  CExpr p = cconst(0);
  for (size_t k = 0; k + 2 < cs.size(); ++k) p = p * cconst(cs[k]) + ci[k];
  const CExpr row = ci[ci.size() - 2], col = ci.back();
  line(fmt::format("const {}* ar = sa + {};", vt,
                   ((Ba == 1 ? cconst(0) : p * cconst(M * K)) + row * cconst(K)).text));
  line(fmt::format("const {}* bc = sb + {};", vt, ((Bb == 1 ? cconst(0) : p * cconst(K * N)) + col).text));
  line(fmt::format("{} acc = {};", vt,
                   value_of(c.dtype, fmt::format("tv_get<{}>({}, i)", c.dtype.bits(), c.name))));
  if (integer) {
    line(fmt::format(
        "for (int k = 0; k < {}; ++k) acc = (tv_i64)((tv_u64)acc + (tv_u64)ar[k] * (tv_u64)bc[k * {}]);", K,
        N));
    line(fmt::format("tv_set<{}>({}, i, tv_wrap<{}>(acc));", d.dtype.bits(), d.name, type_args(d.dtype)));
  } else {
    line(fmt::format("for (int k = 0; k < {}; ++k) acc = tv_dadd(acc, tv_dmul(ar[k], bc[k * {}]));", K, N));
    line(fmt::format("tv_set<{}>({}, i, tv_round<{}>(acc));", d.dtype.bits(), d.name, type_args(d.dtype)));
  }
  close();
  line("__syncthreads();");
  close();
}

}  // namespace tilevm::codegen::cuda
