// ReduceSum/Max/Min along one dimension.
//
// Fast path (mode layouts whose reduced dimension is spread over threads in power-of-two groups): each
// thread first combines its own slots along the dimension, then the lanes of a warp exchange partial results
// with __shfl_xor_sync butterflies over the dimension's lane digits. When the dimension also spans warps,
// one lane per warp writes its partials to a small shared scratch (a row per result thread and warp) and
// every thread combines the warps' rows in the same order, so every replica ends with the same value.
// Max and Min are exact; a float sum is associated differently from the interpreter's left-to-right sum
// (computed in double, then rounded once, so results rarely differ).
// Otherwise (any layout): the tile goes through shared scratch memory in row-major order and every thread
// reduces its result elements left to right in double or 64-bit integers, exactly as the interpreter.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>

#include "emitter.h"
#include "tilevm/support/error.h"

namespace tilevm::codegen::cuda {

namespace {

std::string combine(ir::ReduceOp op, bool is_float, const std::string& a, const std::string& b) {
  switch (op) {
    case ir::ReduceOp::Sum:
      return is_float ? fmt::format("tv_dadd({}, {})", a, b)
                      : fmt::format("(tv_i64)((tv_u64){} + (tv_u64){})", a, b);
    case ir::ReduceOp::Max:
      return is_float ? fmt::format("tv_fmax({}, {})", a, b) : fmt::format("({0} > {1} ? {0} : {1})", a, b);
    case ir::ReduceOp::Min:
      return is_float ? fmt::format("tv_fmin({}, {})", a, b) : fmt::format("({0} < {1} ? {0} : {1})", a, b);
  }
  return a;
}

std::string value_of(DataType t, const std::string& code) {
  if (t.is_float()) return fmt::format("tv_decode<{}>({})", type_args(t), code);
  return fmt::format("tv_to_int<{}, {}>({})",
                     t.is_bool()                       ? 0
                     : t.kind() == TypeKind::SignedInt ? 1
                                                       : 2,
                     t.bits(), code);
}

std::string round_to(DataType t, const std::string& v) {
  return t.is_float() ? fmt::format("tv_round<{}>({})", type_args(t), v)
                      : fmt::format("tv_wrap<{}>({})", type_args(t), v);
}

}  // namespace

bool Emitter::try_reduce_shuffle(const ir::ReduceInst& n, const RegInfo& src, const RegInfo& out) {
  const layout::ModeLayout* ml = src.layout.mode_form();
  if (!ml) return false;
  try {
    layout::Layout expected = layout::reduce(src.layout, {n.dim});
    if (n.keepdim) expected = layout::insert_dim(expected, n.dim);
    if (!(expected == out.layout)) return false;
  } catch (const Error&) {
    return false;
  }
  // The thread digits, inner to outer, as (stride, size, reduced). A reduced digit that straddles the warp
  // boundary (stride < 32 < stride * size, both powers of two) splits into its lane and its warp part.
  struct Digit {
    int64_t stride, size;
    bool reduced;
    bool lanes() const { return reduced && stride < 32; }   // reduced by shuffles inside a warp
    bool warps() const { return reduced && stride >= 32; }  // reduced through shared scratch
  };
  std::vector<Digit> digits;
  int64_t stride = 1;
  for (size_t p = ml->spatial.size(); p-- > 0;) {
    const int64_t e = ml->spatial[p];
    const int64_t size = e < 0 ? -e : ml->mode_size[static_cast<size_t>(e)];
    const bool reduced = e >= 0 && ml->mode_dim[static_cast<size_t>(e)] == n.dim;
    if (reduced) {
      if (!std::has_single_bit(static_cast<uint64_t>(size)) ||
          !std::has_single_bit(static_cast<uint64_t>(stride)))
        return false;
      if (stride < 32 && stride * size > 32) {
        digits.push_back({stride, 32 / stride, true});
        digits.push_back({32, stride * size / 32, true});
      } else {
        digits.push_back({stride, size, true});
      }
    } else {
      digits.push_back({stride, size, false});
    }
    stride *= size;
  }
  if (threads_ % 32 != 0 && threads_ < 32 && !std::has_single_bit(static_cast<uint64_t>(threads_)))
    return false;
  int steps = 0;      // shuffle steps inside a warp
  int64_t warps = 1;  // warps whose partials meet in shared scratch
  for (const Digit& d : digits) {
    if (d.lanes()) steps += std::countr_zero(static_cast<uint64_t>(d.size));
    if (d.warps()) warps *= d.size;
  }
  // Digits across warps need every thread of the block in the layout (their partials meet in shared memory,
  // behind a block barrier).
  const bool across_warps = warps > 1;
  if (across_warps && stride != threads_) return false;
  // Which of the thread's source slots feed each result slot (independent of the thread in a mode layout).
  const int64_t m_out = out.layout.num_locals(), m_src = src.layout.num_locals();
  std::vector<std::vector<int64_t>> feeds(static_cast<size_t>(m_out));
  for (int64_t i = 0; i < m_src; ++i) {
    layout::Index idx = src.layout.map(0, i);
    if (n.keepdim) {
      idx[static_cast<size_t>(n.dim)] = 0;
    } else {
      idx.erase(idx.begin() + n.dim);
    }
    int64_t slot = -1;
    for (const auto& [t, s] : out.layout.owners(idx))
      if (t == 0) slot = s;
    if (slot < 0) return false;
    feeds[static_cast<size_t>(slot)].push_back(i);
  }
  int64_t across = 1;
  for (const Digit& d : digits)
    if (d.reduced) across *= d.size;
  for (const auto& f : feeds)
    if (static_cast<int64_t>(f.size()) * across != src.layout.shape()[static_cast<size_t>(n.dim)])
      return false;

  const bool is_float = src.dtype.is_float();
  const std::string vt = is_float ? "double" : "tv_i64";
  // The warps' partials: one row of m_out values per (warp combination, thread with its reduced digits at 0).
  const int64_t rows = threads_ / across;
  const int64_t scratch_bytes = across_warps ? warps * rows * m_out * 8 : 0;
  const std::string sc = across_warps ? scratch(scratch_bytes) : std::string();
  note(*current_,
       fmt::format("in-thread over {} slots, then {} warp shuffle step(s){}", feeds[0].size(), steps,
                   across_warps ? fmt::format(", then {} warps' partials through {} bytes of shared "
                                              "scratch",
                                              warps, scratch_bytes)
                                : ""));
  open("");
  line(fmt::format("{} acc[{}];", vt, m_out));
  for (int64_t o = 0; o < m_out; ++o) {
    const auto& f = feeds[static_cast<size_t>(o)];
    std::string v = value_of(src.dtype, fmt::format("tv_get<{}>({}, {})", src.dtype.bits(), src.name, f[0]));
    for (size_t k = 1; k < f.size(); ++k)
      v = combine(n.op, is_float, v,
                  value_of(src.dtype, fmt::format("tv_get<{}>({}, {})", src.dtype.bits(), src.name, f[k])));
    line(fmt::format("acc[{}] = {};", o, v));
  }
  for (const Digit& d : digits) {
    if (!d.lanes()) continue;
    for (int64_t off = d.stride; off < d.stride * d.size; off *= 2) {
      line("#pragma unroll");
      line(fmt::format("for (int o = 0; o < {}; ++o) acc[o] = {};", m_out,
                       combine(n.op, is_float, "acc[o]",
                               fmt::format("__shfl_xor_sync({}, acc[o], {})", thread_mask_all(), off))));
    }
  }
  if (across_warps) {
    // Row of this thread among the threads that keep a result (the non-reduced digits), the warp combination
    // it belongs to, and whether it is the lane that writes (its reduced lane digits at 0). Every thread then
    // combines the warps' rows in the same order, so all replicas agree.
    std::vector<std::string> row, warp, writer;
    int64_t row_stride = 1, warp_stride = 1;
    for (const Digit& d : digits) {
      const std::string digit = fmt::format("((t / {}) % {})", d.stride, d.size);
      if (!d.reduced) {
        row.push_back(fmt::format("{} * {}", digit, row_stride));
        row_stride *= d.size;
      } else if (d.warps()) {
        warp.push_back(fmt::format("{} * {}", digit, warp_stride));
        warp_stride *= d.size;
      } else {
        writer.push_back(digit + " == 0");
      }
    }
    if (row.empty()) row.push_back("0");
    line(fmt::format("{0}* sc = ({0}*){1};", vt, sc));
    line(fmt::format("const int row = {}, warp = {};", fmt::join(row, " + "), fmt::join(warp, " + ")));
    line("__syncthreads();  // the scratch may still be read by an earlier instruction");
    line("#pragma unroll");
    const std::string store = fmt::format("sc[(warp * {} + row) * {} + o] = acc[o];", rows, m_out);
    line(fmt::format("for (int o = 0; o < {}; ++o) {}", m_out,
                     writer.empty() ? store : fmt::format("if ({}) {}", fmt::join(writer, " && "), store)));
    line("__syncthreads();");
    line("#pragma unroll");
    open(fmt::format("for (int o = 0; o < {}; ++o)", m_out));
    line(fmt::format("acc[o] = sc[row * {} + o];", m_out));
    line(fmt::format(
        "for (int w = 1; w < {}; ++w) acc[o] = {};", warps,
        combine(n.op, is_float, "acc[o]", fmt::format("sc[(w * {} + row) * {} + o]", rows, m_out))));
    close();
  }
  line("#pragma unroll");
  line(fmt::format("for (int o = 0; o < {}; ++o) tv_set<{}>({}, o, {});", m_out, out.dtype.bits(), out.name,
                   round_to(out.dtype, "acc[o]")));
  if (across_warps) line("__syncthreads();");
  close();
  return true;
}

void Emitter::emit_reduce(const ir::InstStmt& s, const ir::ReduceInst& n) {
  const RegInfo& src = reg_arg(n.src);
  const ir::Var& var = n.out ? n.out : s.results.at(0);
  const RegInfo& out = reg(var);
  if (try_reduce_shuffle(n, src, out)) return;
  const layout::Index& shape = src.layout.shape();
  const int64_t elements = src.layout.num_elements();
  const bool is_float = src.dtype.is_float();
  const std::string vt = is_float ? "double" : "tv_i64";
  const std::string sc = scratch(elements * 8);
  note(s, fmt::format("through {} bytes of shared scratch, left to right", elements * 8));
  open("");
  line(fmt::format("{}* sc = ({}*){};", vt, vt, sc));
  line("__syncthreads();  // the scratch may still be read by an earlier instruction");
  auto linear = [&](const std::vector<CExpr>& idx) {
    CExpr l = cconst(0);
    for (size_t d = 0; d < shape.size(); ++d) l = l * cconst(shape[d]) + idx[d];
    return l;
  };
  line("#pragma unroll");
  open(fmt::format("for (int i = 0; i < {}; ++i)", src.layout.num_locals()));
  line(fmt::format("sc[{}] = {};", linear(layout_index(src.layout, cvar("t"), cvar("i"))).text,
                   value_of(src.dtype, fmt::format("tv_get<{}>({}, i)", src.dtype.bits(), src.name))));
  close();
  line("__syncthreads();");
  line("#pragma unroll");
  open(fmt::format("for (int i = 0; i < {}; ++i)", out.layout.num_locals()));
  std::vector<CExpr> oi = layout_index(out.layout, cvar("t"), cvar("i"));
  if (!n.keepdim) oi.insert(oi.begin() + n.dim, cconst(0));
  std::vector<CExpr> at0 = oi, atj = oi;
  at0[static_cast<size_t>(n.dim)] = cconst(0);
  atj[static_cast<size_t>(n.dim)] = cvar("j");
  line(fmt::format("{} acc = sc[{}];", vt, linear(at0).text));
  line(fmt::format("for (int j = 1; j < {}; ++j) acc = {};", shape[static_cast<size_t>(n.dim)],
                   combine(n.op, is_float, "acc", "sc[" + linear(atj).text + "]")));
  line(fmt::format("tv_set<{}>({}, i, {});", out.dtype.bits(), out.name, round_to(out.dtype, "acc")));
  close();
  line("__syncthreads();");
  close();
}

}  // namespace tilevm::codegen::cuda
