// Tiles in global and shared memory: addressing through views (docs/language.md: subscripts, offsets, a
// lower-rank tile addresses the trailing dimensions), LoadGlobal/LoadShared and StoreGlobal/StoreShared.
//
// Instruction selection: when the register layout divides by local(1, ..., v) (v consecutive slots along the
// last dimension) and the memory holds those v elements contiguously, each group of v slots moves with one
// 16-, 8- or 4-byte access. Alignment and (global) bounds are checked per group at run time; a group that
// fails falls back to per-element accesses, which read 0 outside a global tensor and drop writes there. A
// global load tests the whole tile first (whole_tile_check) and, where it passes, skips the groups' tests.
// What the divisibility analysis of the offsets (CExpr::log2_div) proves is not checked: a shared access
// whose offset is a multiple of v at a planned (aligned) base has no check and no fallback; a global one
// keeps its address and bounds checks (base pointers are runtime values).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "emitter.h"
#include "tilevm/support/error.h"

namespace tilevm::codegen::cuda {

namespace {

struct ViewShape {
  std::vector<CExpr> origin;
  std::vector<int> kept;
};

}  // namespace

CExpr Emitter::index_expr(const ir::Expr& e) {
  CExpr x = int_expr(e);
  if (!x.value) x.log2_div = log2_divisor(e);
  return x;
}

// The dimensions of m that the view `arg` keeps (not selected by an index subscript).
std::vector<int> kept_dims(const MemTensor& m, const ir::TensorArg& arg) {
  std::vector<int> kept;
  for (size_t d = 0; d < m.shape.size(); ++d)
    if (d >= arg.slices.size() || arg.slices[d].kind != ir::Slice::Kind::Index)
      kept.push_back(static_cast<int>(d));
  return kept;
}

std::vector<int> Emitter::tile_dims(const MemTensor& m, const ir::TensorArg& arg, size_t r) {
  const std::vector<int> kept = kept_dims(m, arg);
  std::vector<int> dims(r, -1);
  const int V = static_cast<int>(kept.size()), R = static_cast<int>(r);
  for (int v = 0; v < V; ++v)
    if (v + (R - V) >= 0) dims[static_cast<size_t>(v + (R - V))] = kept[static_cast<size_t>(v)];
  return dims;
}

ElementAccess Emitter::access(const MemTensor& m, const ir::TensorArg& arg,
                              const std::vector<ir::Expr>& offset, const std::vector<CExpr>& tile_index) {
  const size_t R = m.shape.size();
  std::vector<CExpr> base(R, cconst(0));
  for (size_t d = 0; d < R && d < arg.slices.size(); ++d)
    if (arg.slices[d].kind != ir::Slice::Kind::Full) base[d] = index_expr(arg.slices[d].value);
  const std::vector<int> kept = kept_dims(m, arg);
  for (size_t v = 0; v < kept.size() && !offset.empty(); ++v)
    base[static_cast<size_t>(kept[v])] = base[static_cast<size_t>(kept[v])] + index_expr(offset[v]);
  const std::vector<int> dims = tile_dims(m, arg, tile_index.size());
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k] >= 0) base[static_cast<size_t>(dims[k])] = base[static_cast<size_t>(dims[k])] + tile_index[k];
  ElementAccess a;
  a.base = base;
  if (m.layout && !m.tile_strides.empty()) {
    // A tiled global: the tile's first element, then the layout's offset within the tile.
    const layout::Index& tile = m.layout->shape();
    std::vector<CExpr> within(R);
    CExpr off = cconst(0);
    for (size_t d = 0; d < R; ++d) {
      within[d] = base[d] % cconst(tile[d]);
      off = off + (base[d] / cconst(tile[d])) * m.tile_strides[d];
    }
    a.offset = off + layout_offset(*m.layout, within);
  } else if (m.layout) {
    a.offset = layout_offset(*m.layout, base);
  } else {
    CExpr off = cconst(0);
    for (size_t d = 0; d < R; ++d) {
      CExpr term = m.strides[d] * base[d];
      if (!term.value)
        term = cvar("(tv_i64)" + base[d].text + " * " + m.strides[d].text,
                    std::min(base[d].log2_div + m.strides[d].log2_div, kMaxLog2Div));
      off = off + term;
    }
    a.offset = off;
  }
  if (m.scope == ir::Scope::Global) {
    std::string inside;
    for (size_t d = 0; d < R; ++d) {
      if (base[d].value && m.shape[d].value && *base[d].value >= 0 && *base[d].value < *m.shape[d].value)
        continue;
      inside += (inside.empty() ? "" : " && ") +
                fmt::format("(unsigned)({}) < (unsigned)({})", base[d].text, m.shape[d].text);
    }
    a.inside = inside.empty() ? "1" : inside;
  }
  return a;
}

int Emitter::memory_run(const MemTensor& m, const ir::TensorArg& arg) {
  const size_t R = m.shape.size();
  if (R == 0 || (arg.slices.size() >= R && arg.slices[R - 1].kind == ir::Slice::Kind::Index)) return 1;
  if (!m.layout) return m.strides.back().value && *m.strides.back().value == 1 ? (1 << 20) : 1;
  int best = 1;
  for (int w = 2; w <= 1024; w *= 2) {
    layout::Index ext(R, 1);
    ext.back() = w;
    try {
      (void)layout::divide(*m.layout, layout::local(ext));
      best = w;
    } catch (const Error&) {
      break;
    }
  }
  return best;
}

int Emitter::vector_width(const MemTensor& m, const ir::TensorArg& arg, const layout::Layout& reg_layout,
                          int max_bits) {
  const int b = m.dtype.bits();
  const int run = memory_run(m, arg);
  for (int vb : {128, 64, 32}) {
    if (vb > max_bits || vb % b != 0) continue;
    const int v = vb / b;
    if (v < 2 && b < 32) continue;
    if (run % v != 0 && run < (1 << 20)) continue;
    if (reg_layout.rank() == 0 || reg_layout.num_locals() % v != 0) continue;
    layout::Index ext(static_cast<size_t>(reg_layout.rank()), 1);
    ext.back() = v;
    try {
      (void)layout::divide(reg_layout, layout::local(ext));
      return v;
    } catch (const Error&) {
    }
  }
  return 1;
}

std::optional<std::vector<layout::Index>> view_origins(const MemTensor& m, const ir::TensorArg& arg,
                                                       int64_t limit) {
  const layout::Index shape = m.layout->shape();
  std::vector<layout::Index> choices(shape.size(), layout::Index{0});
  int64_t count = 1;
  for (size_t d = 0; d < shape.size() && d < arg.slices.size(); ++d) {
    const ir::Slice& sl = arg.slices[d];
    if (sl.kind == ir::Slice::Kind::Full) continue;
    if (const auto c = ir::as_const_int(sl.value)) {
      choices[d] = {*c};
    } else if (sl.kind == ir::Slice::Kind::Index) {
      choices[d].resize(static_cast<size_t>(shape[d]));
      for (int64_t x = 0; x < shape[d]; ++x) choices[d][static_cast<size_t>(x)] = x;
    } else {
      return std::nullopt;
    }
    count *= static_cast<int64_t>(choices[d].size());
    if (count > limit) return std::nullopt;
  }
  if (count > limit) return std::nullopt;
  std::vector<layout::Index> out;
  for (int64_t o = 0; o < count; ++o) {
    layout::Index origin(shape.size(), 0);
    int64_t rest = o;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t n = static_cast<int64_t>(choices[d].size());
      origin[d] = choices[d][static_cast<size_t>(rest % n)];
      rest /= n;
    }
    out.push_back(std::move(origin));
  }
  return out;
}

int Emitter::slot_run_width(const MemTensor& m, const ir::TensorArg& arg, const std::vector<ir::Expr>& offset,
                            const layout::Layout& reg_layout, int max_bits,
                            std::optional<std::pair<int64_t, int64_t>>* step) {
  if (m.scope != ir::Scope::Shared || !m.layout || reg_layout.rank() == 0) return 1;
  const int B = m.dtype.bits();
  const layout::Index shape = m.layout->shape();
  const size_t R = shape.size(), r = static_cast<size_t>(reg_layout.rank());
  // The view's origins (constant subscripts, an index subscript over its whole extent), then the offsets.
  const int64_t T = reg_layout.num_threads(), slots = reg_layout.num_locals();
  const std::optional<std::vector<layout::Index>> origins =
      view_origins(m, arg, (int64_t{1} << 20) / (T * slots));
  if (!origins) return 1;
  const std::vector<int> kept = kept_dims(m, arg);
  layout::Index shift(R, 0);
  for (size_t k = 0; k < kept.size() && k < offset.size(); ++k) {
    const auto c = ir::as_const_int(offset[k]);
    if (!c) return 1;
    shift[static_cast<size_t>(kept[k])] = *c;
  }
  const std::vector<int> dims = tile_dims(m, arg, r);
  for (int vb : {128, 64, 32}) {
    if (vb > max_bits || vb % B != 0 || vb / B < 2 || slots % (vb / B) != 0) continue;
    const int64_t v = vb / B;
    bool ok = true, affine = true;
    std::optional<int64_t> a, b;  // the steps per thread and per group
    for (size_t o = 0; o < origins->size() && ok; ++o) {
      layout::Index origin = (*origins)[o];
      for (size_t d = 0; d < R; ++d) origin[d] += shift[d];
      int64_t zero = 0;  // thread 0's first group
      for (int64_t t = 0; t < T && ok; ++t) {
        int64_t first = 0;
        for (int64_t i = 0; i < slots && ok; ++i) {
          const layout::Index x = reg_layout.map(t, i);
          layout::Index at = origin;
          for (size_t k = 0; k < r; ++k)
            if (dims[k] >= 0) at[static_cast<size_t>(dims[k])] += x[k];
          for (size_t d = 0; d < R; ++d) ok = ok && at[d] >= 0 && at[d] < shape[d];
          if (!ok) break;
          const auto owners = m.layout->owners(at);
          ok = owners.size() == 1;
          if (!ok) break;
          const int64_t off = owners.front().second;
          if (i % v == 0) {
            first = off;
            ok = off % v == 0;
            const int64_t g = i / v;
            if (t == 0 && g == 0) zero = off;
            if (t == 1 && g == 0 && !a) a = off - zero;
            if (t == 0 && g == 1 && !b) b = off - zero;
            affine = affine && off - zero == t * a.value_or(0) + g * b.value_or(0);
          } else {
            ok = off == first + i % v;
          }
        }
      }
    }
    if (ok && m.ptr_align % (vb / 8) == 0) {
      if (step) *step = affine ? std::optional(std::pair{a.value_or(0), b.value_or(0)}) : std::nullopt;
      return static_cast<int>(v);
    }
  }
  return 1;
}

namespace {

// The C type moving `words` 32-bit words at once and its fields.
const char* vec_type(int64_t words) {
  return words == 4 ? "uint4" : words == 2 ? "uint2" : "tv_u32";
}
std::string vec_field(int64_t words, int64_t k) {
  if (words == 1) return "";
  return std::string(".") + "xyzw"[k];
}

}  // namespace

bool Emitter::proven_aligned(const MemTensor& m, const CExpr& off, int v) const {
  return divisible(off, v) && m.ptr_align % (v * m.dtype.bits() / 8) == 0;
}

// The run-time test that a vector of v elements at element offset `off` (its C text `text`: a name or a
// parenthesized expression) is aligned: the
// offset a multiple of v where that is not proven (below 8 bits the byte address alone would round an odd
// element down to its byte), and the address a multiple of the vector's bytes.
std::string Emitter::alignment_test(const MemTensor& m, const CExpr& off, const std::string& text,
                                    int v) const {
  const int B = m.dtype.bits();
  std::string ok = fmt::format("(((unsigned long long)({}) + (unsigned long long){} * {} / 8) % {} == 0)",
                               m.ptr, text, B, v * B / 8);
  return divisible(off, v) ? ok : fmt::format("({} % {} == 0) && {}", text, v, ok);
}

// Emits `off`, the element offset of a group of v consecutive slots starting at tile index `idx`, and
// returns the condition under which the group moves as one vector: the offset and the address are aligned to
// the vector, and (global memory) both ends of the group lie inside the tensor. Parts that are proven
// statically are left out ("1" when nothing is left).
std::string Emitter::vector_group_check(const MemTensor& m, const ir::TensorArg& arg,
                                        const std::vector<ir::Expr>& offset, const std::vector<CExpr>& idx,
                                        int v) {
  const ElementAccess first = access(m, arg, offset, idx);
  line(fmt::format("const tv_i64 off = {};", first.offset.text));
  if (proven_aligned(m, first.offset, v) && m.scope != ir::Scope::Global) return "1";
  std::string ok = alignment_test(m, first.offset, "off", v);
  if (m.scope == ir::Scope::Global) {
    std::vector<CExpr> last = idx;
    last.back() = last.back() + cconst(v - 1);
    ok = fmt::format("{} && ({}) && ({})", ok, first.inside, access(m, arg, offset, last).inside);
  }
  return ok;
}

std::string Emitter::whole_tile_check(const MemTensor& m, const ir::TensorArg& arg,
                                      const std::vector<ir::Expr>& offset, const layout::Layout& lay, int v) {
  if (m.scope != ir::Scope::Global || m.layout || lay.rank() == 0) return "";
  const std::vector<CExpr> idx = layout_index(lay, cvar("t"), cvar("g") * cconst(v));
  if (!divisible(idx.back(), v)) return "";
  const std::vector<int> dims = tile_dims(m, arg, static_cast<size_t>(lay.rank()));
  if (dims.back() < 0) return "";  // the vectors run along the tensor's last dimension (vector_width)
  const size_t r = static_cast<size_t>(lay.rank());
  const layout::Index extent = lay.shape();
  std::vector<CExpr> first(r, cconst(0)), last(r);
  for (size_t k = 0; k < r; ++k) last[k] = cconst(extent[k] - 1);
  const ElementAccess a = access(m, arg, offset, first), b = access(m, arg, offset, last);
  for (const ElementAccess* corner : {&a, &b})
    for (size_t d = 0; d < corner->base.size(); ++d)
      if (corner->base[d].value && m.shape[d].value &&
          (*corner->base[d].value < 0 || *corner->base[d].value >= *m.shape[d].value))
        return "";  // a corner outside for every value of the variables: the checked groups only
  // Each dimension's inside test is an unsigned compare of origin + x: true at x = 0 and at the last x, it
  // is true between them. The first element aligned as vector_group_check asks of each group.
  std::vector<std::string> parts;
  for (const std::string& inside : {a.inside, b.inside})
    if (inside != "1") parts.push_back(inside);
  parts.push_back(alignment_test(m, a.offset, fmt::format("({})", a.offset.text), v));
  // The groups' offsets differ from the first element's by stride x index along each tile dimension; the
  // last dimension's stride is 1 (vector_width) and its indices multiples of v (checked above).
  for (size_t k = 0; k + 1 < r; ++k) {
    if (dims[k] < 0 || extent[k] == 1) continue;
    const CExpr& stride = m.strides[static_cast<size_t>(dims[k])];
    if (divisible(stride, v)) continue;
    if (stride.value) return "";  // a constant stride that breaks the alignment: every group is checked
    parts.push_back(fmt::format("({} % {} == 0)", stride.text, v));
  }
  return fmt::format("{}", fmt::join(parts, " && "));
}

// For each group g of v consecutive slots of `lay`: `vector_move` (which may use `off` and `g`) when the
// group passes vector_group_check, else `element` for each of its slots. Loads and stores share this shape.
// A group whose check is proven statically moves as a vector with no fallback. Given `whole_tile` (a load's
// whole_tile_check), the tile is first tested whole and, where it passes, every group moves unchecked: behind
// a branch each, the loads of a split-K sum went out one after another instead of overlapping.
void Emitter::vector_groups(const MemTensor& m, const ir::TensorArg& arg, const std::vector<ir::Expr>& offset,
                            const layout::Layout& lay, int v, const std::function<void()>& vector_move,
                            const ElementFn& element, const std::string& whole_tile) {
  if (!whole_tile.empty()) {
    open(fmt::format("if ({})", whole_tile));
    line("#pragma unroll");
    open(fmt::format("for (int g = 0; g < {}; ++g)", lay.num_locals() / v));
    line(
        fmt::format("const tv_i64 off = {};",
                    access(m, arg, offset, layout_index(lay, cvar("t"), cvar("g") * cconst(v))).offset.text));
    vector_move();
    close();
    close("} else {");
    ++indent_;
    vector_groups(m, arg, offset, lay, v, vector_move, element);
    close();
    return;
  }
  line("#pragma unroll");
  open(fmt::format("for (int g = 0; g < {}; ++g)", lay.num_locals() / v));
  std::vector<CExpr> idx = layout_index(lay, cvar("t"), cvar("g") * cconst(v));
  const std::string check = vector_group_check(m, arg, offset, idx, v);
  if (check == "1") {
    vector_move();
    close();
    return;
  }
  open(fmt::format("if ({})", check));
  vector_move();
  close("} else {");
  ++indent_;
  line("#pragma unroll");
  open(fmt::format("for (int e = 0; e < {}; ++e)", v));
  idx.back() = idx.back() + cvar("e");
  element(fmt::format("g * {} + e", v), idx);
  close();
  close();
  close();
}

bool Emitter::vector_groups_aligned(const MemTensor& m, const ir::TensorArg& arg,
                                    const std::vector<ir::Expr>& offset, const layout::Layout& lay, int v) {
  const std::vector<CExpr> idx = layout_index(lay, cvar("t"), cvar("g") * cconst(v));
  return proven_aligned(m, access(m, arg, offset, idx).offset, v);
}

void Emitter::emit_load(const ir::InstStmt& s, const ir::LoadInst& n) {
  const MemTensor& m = mem(n.src.tensor);
  const RegInfo& out = result_reg(s, n.out, m.dtype, n.layout);
  const int B = m.dtype.bits();
  const int64_t slots = out.layout.num_locals();
  const bool global = m.scope == ir::Scope::Global;
  if (!global && try_ldmatrix(s, n, m, out)) return;
  const int v = vector_width(m, n.src, out.layout, 128);
  // Runs of slots that lie consecutively in memory though not along a row (a tile in its reader's order).
  std::optional<std::pair<int64_t, int64_t>> step;
  const int run = v == 1 ? slot_run_width(m, n.src, n.offset, out.layout, 128, &step) : 1;
  open("");
  if (run > 1) {
    const int64_t words = run * B / 32;
    note(s, fmt::format("{}-byte vector loads ({} elements per access): each group of slots lies in order in "
                        "the shared tile, aligned by construction",
                        words * 4, run));
    line("#pragma unroll");
    open(fmt::format("for (int g = 0; g < {}; ++g)", slots / run));
    CExpr off;
    if (step) {
      const CExpr zero = access(m, n.src, n.offset, layout_index(out.layout, cconst(0), cconst(0))).offset;
      off = zero + cvar("t") * cconst(step->first) + cvar("g") * cconst(step->second);
    } else {
      off = access(m, n.src, n.offset, layout_index(out.layout, cvar("t"), cvar("g") * cconst(run))).offset;
    }
    line(fmt::format("const {} x = *(const {}*)({} + ({}) * {} / 8);", vec_type(words), vec_type(words),
                     m.ptr, off.text, B));
    for (int64_t k = 0; k < words; ++k)
      line(fmt::format("{}[g * {} + {}] = x{};", out.name, words, k, vec_field(words, k)));
    close();
    close();
    return;
  }
  // One element at slot expression `slot` whose tile index is `idx`.
  auto element = [&](const std::string& slot, const std::vector<CExpr>& idx) {
    const ElementAccess a = access(m, n.src, n.offset, idx);
    if (a.inside == "1") {
      line(fmt::format("tv_set<{}>({}, {}, tv_ld<{}>({}, {}));", B, out.name, slot, B, m.ptr, a.offset.text));
    } else {
      line(fmt::format("tv_set<{}>({}, {}, ({}) ? tv_ld<{}>({}, {}) : 0ull);", B, out.name, slot, a.inside, B,
                       m.ptr, a.offset.text));
    }
  };
  if (v > 1) {
    const int64_t words = v * B / 32;
    const std::string whole = whole_tile_check(m, n.src, n.offset, out.layout, v);
    note(s,
         vector_groups_aligned(m, n.src, n.offset, out.layout, v) && !global
             ? fmt::format("{}-byte vector loads ({} elements per access), aligned by construction",
                           words * 4, v)
             : fmt::format("{}-byte vector loads ({} elements per access), {}per-element where unaligned{}",
                           words * 4, v,
                           whole.empty() ? "" : "unchecked where the whole tile is inside and aligned, else ",
                           global ? " or at the edge" : ""));
    vector_groups(
        m, n.src, n.offset, out.layout, v,
        [&] {
          line(fmt::format("const {} x = *(const {}*)({} + off * {} / 8);", vec_type(words), vec_type(words),
                           m.ptr, B));
          for (int64_t k = 0; k < words; ++k)
            line(fmt::format("{}[g * {} + {}] = x{};", out.name, words, k, vec_field(words, k)));
        },
        element, whole);
  } else {
    note(s, "per-element loads");
    line("#pragma unroll");
    open(fmt::format("for (int i = 0; i < {}; ++i)", slots));
    element("i", layout_index(out.layout, cvar("t"), cvar("i")));
    close();
  }
  close();
}

void Emitter::emit_store(const ir::InstStmt& s, const ir::StoreInst& n) {
  const RegInfo& src = reg_arg(n.src);
  const MemTensor& m = mem(n.dst.tensor);
  const int B = m.dtype.bits();
  const int64_t slots = src.layout.num_locals();
  const bool global = m.scope == ir::Scope::Global;
  const int v = vector_width(m, n.dst, src.layout, 128);
  open("");
  if (const auto* g = n.as<ir::StoreGlobalInst>(); g && g->canonicalizes_nan) {
    // The source's producers left the hardware's NaN (analyze_nan_payload): made canonical here, in place,
    // since no other reader sees its bits.
    line("#pragma unroll");
    line(fmt::format("for (int w = 0; w < {0}; ++w) {1}[w] = tv_canonical_f32(__uint_as_float({1}[w]));",
                     slots, src.name));
  }
  auto element = [&](const std::string& slot, const std::vector<CExpr>& idx) {
    const ElementAccess a = access(m, n.dst, n.offset, idx);
    const std::string st =
        fmt::format("tv_st<{}>({}, {}, tv_get<{}>({}, {}));", B, m.ptr, a.offset.text, B, src.name, slot);
    line(a.inside == "1" ? st : fmt::format("if ({}) {}", a.inside, st));
  };
  if (v > 1) {
    const int64_t words = v * B / 32;
    note(s, vector_groups_aligned(m, n.dst, n.offset, src.layout, v) && !global
                ? fmt::format("{}-byte vector stores ({} elements per access), aligned by construction",
                              words * 4, v)
                : fmt::format("{}-byte vector stores ({} elements per access), per-element where unaligned{}",
                              words * 4, v, global ? " or at the edge" : ""));
    // Stores keep their check per group (no whole_tile): a store does not wait for memory, so the tests cost
    // issue slots only, and unchecked stores in one burst measured slower (docs/performance.md, twenty-fifth
    // session).
    vector_groups(
        m, n.dst, n.offset, src.layout, v,
        [&] {
          std::string fields;
          for (int64_t k = 0; k < words; ++k)
            fields += fmt::format("{}{}[g * {} + {}]", k ? ", " : "", src.name, words, k);
          if (words == 1) {
            line(fmt::format("*(tv_u32*)({} + off * {} / 8) = {};", m.ptr, B, fields));
          } else {
            line(fmt::format("*({}*)({} + off * {} / 8) = make_{}({});", vec_type(words), m.ptr, B,
                             vec_type(words), fields));
          }
        },
        element);
  } else {
    note(s,
         B < 8 ? "per-element stores (sub-byte: merged into their words atomically)" : "per-element stores");
    line("#pragma unroll");
    open(fmt::format("for (int i = 0; i < {}; ++i)", slots));
    element("i", layout_index(src.layout, cvar("t"), cvar("i")));
    close();
  }
  close();
}

}  // namespace tilevm::codegen::cuda
