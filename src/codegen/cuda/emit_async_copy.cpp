// CopyAsync(s, g): the whole shared view s is copied from the global view g at its origin; elements outside
// g are zero. The work is not split by a register layout, so the emitter chooses: chunks of v elements along
// the last dimension (v * bits = 128, 64 or 32, where both memories are contiguous) dealt round-robin to the
// threads, each chunk one cp.async of 16, 8 or 4 bytes (zero-filled through src-size when the chunk lies
// wholly outside g). A chunk that is misaligned or straddles g's edge, and every element when no chunk size
// fits, is copied synchronously element by element, which is allowed: the data may land early.
//
// Interior tiles take a fast path chosen once per instruction (block-uniform): when the tile's corners lie
// inside g, the source address at the tile origin is aligned to the chunk and every source stride the chunk
// walk crosses is a multiple of v, every chunk is a whole aligned cp.async, and the loop only computes
// offsets. The destination side is proven statically (the divisibility analysis of the shared offsets,
// CExpr::log2_div, and the planned base); what cannot be proven keeps only the checked loop. A tile that is
// not interior only because its rows reach past g (a decode step's 8 or 16 rows where M is smaller) takes a
// second fast path: each chunk, wholly inside or wholly outside g, is one cp.async whose src-size is 16 or 0.
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "emitter.h"
#include "tilevm/support/error.h"

namespace tilevm::codegen::cuda {

std::vector<CExpr> tile_index(const layout::Index& tile, const CExpr& linear) {
  std::vector<CExpr> idx(tile.size(), cconst(0));
  CExpr rest = linear;
  for (size_t d = tile.size(); d-- > 0;) {
    idx[d] = d == 0 ? rest : rest % cconst(tile[d]);
    rest = rest / cconst(tile[d]);
  }
  return idx;
}

namespace {

// The byte offset of element offset `off` of `bits`-bit elements, exact when off * bits is a multiple of 8.
CExpr byte_offset(const CExpr& off, int bits) {
  return bits % 8 == 0 ? off * cconst(bits / 8) : shr(off, std::countr_zero(static_cast<unsigned>(8 / bits)));
}

// `(tv_i64)x * stride`, as access() writes a strided term.
CExpr wide_product(const CExpr& x, const CExpr& stride) {
  const CExpr p = x * stride;
  if (p.value) return p;
  const std::string w = "(tv_i64)" + x.text;
  return cvar(stride.value && *stride.value == 1 ? w : w + " * " + stride.text, p.log2_div);
}

// The chunk walk: chunk c < chunks starts at the tile's linear element c * v, and thread t takes the chunks
// c = k * threads + t, k < per_thread.
struct ChunkWalk {
  layout::Index tile;
  int64_t v, threads, per_thread, chunks;

  layout::Index index(int64_t c) const {  // the tile index of chunk c's first element
    layout::Index idx(tile.size(), 0);
    int64_t rest = c * v;
    for (size_t d = tile.size(); d-- > 0;) {
      idx[d] = d == 0 ? rest : rest % tile[d];
      rest /= tile[d];
    }
    return idx;
  }
  // Whether value(k * threads + t) - value(t) == k * (value(threads) - value(0)) for every chunk of every
  // thread: the value moves by a constant step per k.
  template <typename F>
  bool linear_in_k(const F& value) const {
    if (per_thread == 1) return true;
    const auto step = value(threads) - value(0);
    for (int64_t t = 0; t < threads && t < chunks; ++t)
      for (int64_t k = 1; k < per_thread && k * threads + t < chunks; ++k)
        if (value(k * threads + t) - value(t) != k * step) return false;
    return true;
  }
};

// The step of the element offset in the shared view `arg` of `m` from a thread's chunk 0 to its chunk k is k
// times this, for every thread, chunk and value of the view's subscripts (the shared shape is constant, so
// they are enumerated); nullopt when not (or when there is too much to enumerate, or a runtime offset).
std::optional<int64_t> shared_step(const MemTensor& m, const ir::TensorArg& arg, const std::vector<int>& dims,
                                   const ChunkWalk& w) {
  if (w.per_thread == 1) return 0;
  const layout::Index shape = m.layout->shape();
  const std::optional<std::vector<layout::Index>> origins =
      view_origins(m, arg, (int64_t{1} << 16) / w.chunks);
  if (!origins) return std::nullopt;
  std::optional<int64_t> step;
  for (const layout::Index& origin : *origins) {
    bool inside = true;
    auto offset = [&](int64_t c) -> int64_t {
      layout::Index base = origin;
      const layout::Index idx = w.index(c);
      for (size_t k = 0; k < dims.size(); ++k)
        if (dims[k] >= 0) base[static_cast<size_t>(dims[k])] += idx[k];
      for (size_t d = 0; d < base.size(); ++d) inside = inside && base[d] >= 0 && base[d] < shape[d];
      if (!inside) return 0;
      const auto owners = m.layout->owners(base);
      inside = owners.size() == 1;
      return inside ? owners.front().second : 0;
    };
    if (!w.linear_in_k(offset) || !inside) return std::nullopt;
    const int64_t s = offset(w.threads) - offset(0);
    if (step && *step != s) return std::nullopt;
    step = s;
  }
  return step;
}

// The fast path (see the file comment): emits `if (interior and aligned) { unchecked chunks } else {` and
// returns true, or emits nothing and returns false where the destination side is not proven aligned or a
// constant source stride is not a multiple of v.
//
// `ragged`: the same path for a tile that may reach past g along the dimensions the chunk walk crosses (a
// decode step's 8 or 16 rows of activations where M is 1 or 5): the other dimensions' corners are tested
// once as before, and each chunk, which then lies wholly inside or wholly outside g, tests its own indices
// in those dimensions and is copied or zero-filled by one cp.async (src-size 0). Emitted after the interior
// path, where some such dimension needs a test at run time; false (nothing emitted) elsewhere.
bool emit_fast_copy(Emitter& e, const ir::CopyAsyncInst& n, const ChunkWalk& w, bool ragged) {
  const MemTensor& dst = e.mem(n.dst.tensor);
  const MemTensor& src = e.mem(n.src.tensor);
  const int B = dst.dtype.bits(), v = static_cast<int>(w.v), vbytes = v * B / 8;
  const size_t r = w.tile.size();
  const std::vector<CExpr> idx = tile_index(w.tile, cvar("c") * cconst(v));
  if (!e.proven_aligned(dst, e.access(dst, n.dst, {}, idx).offset, v)) return false;
  std::vector<std::string> cond;
  auto require = [&](const std::string& c) {
    if (std::find(cond.begin(), cond.end(), c) == cond.end()) cond.push_back(c);
  };
  const std::vector<int> sdims = e.tile_dims(src, n.src, r), ddims = e.tile_dims(dst, n.dst, r);
  // The source dimensions a ragged tile tests per chunk: those of the tile's dimensions before the last
  // (a chunk runs along the last) that the tile spans.
  std::vector<bool> per_chunk_dim(src.shape.size(), false);
  if (ragged) {
    if (src.layout) return false;
    for (size_t k = 0; k + 1 < r; ++k)
      if (sdims[k] >= 0 && w.tile[k] > 1) per_chunk_dim[static_cast<size_t>(sdims[k])] = true;
  }
  // Inside g: the first and the last index of the tile in every dimension.
  std::vector<CExpr> zero(r, cconst(0)), corner;
  for (int64_t x : w.tile) corner.push_back(cconst(x - 1));
  const ElementAccess lo = e.access(src, n.src, {}, zero), hi = e.access(src, n.src, {}, corner);
  bool tested_per_chunk = false;
  for (size_t d = 0; d < src.shape.size(); ++d) {
    for (const CExpr* b : {&lo.base[d], &hi.base[d]}) {
      if (b->value && src.shape[d].value && *b->value >= 0 && *b->value < *src.shape[d].value) continue;
      if (per_chunk_dim[d])
        tested_per_chunk = true;
      else
        require(fmt::format("(unsigned)({}) < (unsigned)({})", b->text, src.shape[d].text));
    }
  }
  if (ragged && !tested_per_chunk) return false;
  // The source offset of the chunk at tile index i: for a strided g, the origin's (sbase) plus the strides
  // times i, whose step per chunk k of a thread is constant when the tile index's is.
  CExpr sbase = cconst(0);
  std::optional<CExpr> sstep;
  std::function<CExpr(const std::vector<CExpr>&)> sdelta;
  if (src.layout) {
    if (!divisible(e.access(src, n.src, {}, idx).offset, v)) return false;
    require(fmt::format("(unsigned long long)({}) % {} == 0", src.ptr, vbytes));
    sdelta = [&](const std::vector<CExpr>& i) { return e.access(src, n.src, {}, i).offset; };
  } else {
    for (size_t k = 0; k + 1 < r; ++k) {  // the strides the chunk walk crosses (the last moves by v)
      if (w.tile[k] == 1 || sdims[k] < 0) continue;
      const CExpr& stride = src.strides[static_cast<size_t>(sdims[k])];
      if (divisible(stride, v)) continue;
      if (stride.value) return false;
      require(fmt::format("{} % {} == 0", stride.text, v));
    }
    sbase = cvar(e.fresh("sbase"), lo.offset.log2_div);
    e.line(fmt::format("const tv_i64 {} = {};", sbase.text, lo.offset.text));
    if (B % 8 != 0 && !divisible(sbase, 8 / B)) require(fmt::format("{} % {} == 0", sbase.text, 8 / B));
    require(
        fmt::format("(unsigned long long)({} + {}) % {} == 0", src.ptr, byte_offset(sbase, B).text, vbytes));
    sdelta = [&](const std::vector<CExpr>& i) {
      CExpr off = cconst(0);
      for (size_t k = 0; k < r; ++k)
        if (sdims[k] >= 0) off = off + wide_product(i[k], src.strides[static_cast<size_t>(sdims[k])]);
      return off;
    };
    std::vector<CExpr> step(r, cconst(0));
    bool linear = true;
    for (size_t k = 0; k < r; ++k) {
      linear = linear && w.linear_in_k([&](int64_t c) { return w.index(c)[k]; });
      if (w.per_thread > 1) step[k] = cconst(w.index(w.threads)[k] - w.index(0)[k]);
    }
    if (linear) sstep = sdelta(step);
  }
  std::string c_text;
  for (const std::string& c : cond) c_text += (c_text.empty() ? "" : " && ") + c;
  e.open(fmt::format("if ({})", c_text.empty() ? "true" : c_text));
  e.line(ragged
             ? "// inside g along the last dimension and aligned: every chunk is one cp.async, zero-filled "
               "where its row lies outside g"
             : "// the tile is inside g and aligned: every chunk is one unchecked cp.async");
  // Per-chunk pointers: a thread's first chunk plus k steps where the step is constant, else from c.
  const CExpr k = w.per_thread == 1 ? cconst(0) : cvar("k");
  const std::vector<CExpr> first = tile_index(w.tile, cvar("t") * cconst(v));
  std::string dptr, sptr;
  bool per_chunk = false;  // a pointer computed from c
  const std::string dbase = fmt::format("tv_smem_addr({}) + (tv_u32)", dst.ptr);
  if (const std::optional<int64_t> dstep = shared_step(dst, n.dst, ddims, w)) {
    const std::string dp = e.fresh("dp");
    e.line(fmt::format("const tv_u32 {} = {}{};", dp, dbase,
                       byte_offset(e.access(dst, n.dst, {}, first).offset, B).text));
    dptr = (cvar(dp) + k * cconst(*dstep * B / 8)).text;
  } else {
    dptr = dbase + byte_offset(e.access(dst, n.dst, {}, idx).offset, B).text;
    per_chunk = true;
  }
  const std::string sbytes = sbase.value ? "" : " + " + byte_offset(sbase, B).text;
  if (sstep) {
    const std::string sp = e.fresh("sp");
    e.line(fmt::format("const tv_u8* const {} = {}{} + {};", sp, src.ptr, sbytes,
                       byte_offset(sdelta(first), B).text));
    sptr = (cvar(sp) + k * byte_offset(*sstep, B)).text;
  } else {
    sptr = fmt::format("{}{} + {}", src.ptr, sbytes, byte_offset(sdelta(idx), B).text);
    per_chunk = true;
  }
  const bool even = w.chunks % w.threads == 0;
  e.line("#pragma unroll");
  e.open(fmt::format("for (int k = 0; k < {}; ++k)", w.per_thread));
  if (!even || per_chunk || ragged) e.line(fmt::format("const int c = k * {} + t;", w.threads));
  if (!even) e.line(fmt::format("if (c < {}) {{", w.chunks)), ++e.indent_;
  if (ragged) {
    const ElementAccess at = e.access(src, n.src, {}, idx);
    std::string in;
    for (size_t d = 0; d < src.shape.size(); ++d)
      if (per_chunk_dim[d])
        in += fmt::format("{}(unsigned)({}) < (unsigned)({})", in.empty() ? "" : " && ", at.base[d].text,
                          src.shape[d].text);
    e.line(fmt::format("const bool in = {};", in));
    e.line(fmt::format(
        "tv_cp_async_shared_fill<{}>({}, in ? (const void*)({}) : (const void*)({}), in ? {} : 0);", vbytes,
        dptr, sptr, src.ptr, vbytes));
  } else {
    e.line(fmt::format("tv_cp_async_shared<{}>({}, {});", vbytes, dptr, sptr));
  }
  if (!even) e.close();
  e.close();
  e.close("} else {");
  ++e.indent_;
  return true;
}

// The memory-order path, for a whole tile of a tiled global (a layout= view whose layout is the tile's,
// emit_global.cpp) into a shared view stored in that same order: the tile is one run of bytes in both
// memories, so it is copied as consecutive 16-, 8- or 4-byte chunks whatever the layout (a fragment-ordered
// weight tile has no two consecutive elements along a row). Emits `if (origin on a tile, tile inside g,
// aligned) { chunks } else {` and returns true, or nothing and false where the shapes or orders differ.
}  // namespace

// Whether the shared view `view` of `dst` stores tile index x at its origin's offset plus L's offset of x,
// for every value of its subscripts (a stage of a multi-buffered tile): checked by enumeration, as
// shared_step does.
bool stores_in_order(const MemTensor& dst, const ir::TensorArg& view, const layout::Layout& L,
                     const std::vector<int>& ddims) {
  const int64_t elements = L.num_locals();
  const size_t r = static_cast<size_t>(L.rank());
  const layout::Index shape = dst.layout->shape();
  const std::optional<std::vector<layout::Index>> origins =
      view_origins(dst, view, (int64_t{1} << 20) / elements);
  if (!origins) return false;
  for (const layout::Index& origin : *origins) {
    std::optional<int64_t> first;
    for (int64_t i = 0; i < elements; ++i) {
      const layout::Index x = L.map(0, i);
      layout::Index at = origin;
      for (size_t k = 0; k < r; ++k)
        if (ddims[k] >= 0) at[static_cast<size_t>(ddims[k])] += x[k];
      for (size_t d = 0; d < at.size(); ++d)
        if (at[d] < 0 || at[d] >= shape[d]) return false;
      const auto owners = dst.layout->owners(at);
      if (owners.size() != 1) return false;
      if (!first) first = owners.front().second;
      if (owners.front().second != *first + i) return false;
    }
  }
  return true;
}

// See emitter.h. The checks shared by the memory-order CopyAsync below and the bulk CopyTma (emit_tma.cpp).
std::optional<TiledCopy> tiled_copy(Emitter& e, const MemTensor& dst, const ir::TensorArg& dview,
                                    const MemTensor& src, const ir::TensorArg& sview,
                                    const layout::Index& tile, int align_bytes) {
  if (src.scope != ir::Scope::Global || !src.layout || !dst.layout || src.layout->shape() != tile)
    return std::nullopt;
  const int B = dst.dtype.bits();
  const layout::Layout& L = *src.layout;
  const size_t r = tile.size();
  const std::vector<int> sdims = e.tile_dims(src, sview, r), ddims = e.tile_dims(dst, dview, r);
  for (size_t k = 0; k < r; ++k)
    if (sdims[k] != static_cast<int>(k) || src.shape.size() != r) return std::nullopt;
  if (L.num_locals() * B % (8 * align_bytes) != 0) return std::nullopt;
  TiledCopy t;
  const std::vector<CExpr> zero(r, cconst(0));
  t.dst_offset = e.access(dst, dview, {}, zero).offset;
  if (!e.proven_aligned(dst, t.dst_offset, align_bytes * 8 / B) || !stores_in_order(dst, dview, L, ddims))
    return std::nullopt;
  // At run time: the view's origin on a tile corner, the whole tile inside g, the source address aligned.
  const ElementAccess lo = e.access(src, sview, {}, zero);
  std::vector<std::string> cond;
  for (size_t d = 0; d < r; ++d) {
    // (divisible() knows powers of two only: a tile of 1536 u32 words, 128 x 128 u3 codes, is tested here.)
    if (!std::has_single_bit(static_cast<uint64_t>(tile[d])) || !divisible(lo.base[d], tile[d]))
      cond.push_back(fmt::format("({}) % {} == 0", lo.base[d].text, tile[d]));
    const CExpr &at = lo.base[d], &extent = src.shape[d];
    if (at.value && extent.value) {  // known here: inside, or never on this path
      if (*at.value < 0 || *at.value + tile[d] > *extent.value) return std::nullopt;
      continue;
    }
    cond.push_back(fmt::format("(unsigned)({}) < (unsigned)({})", at.text, extent.text));
    cond.push_back(fmt::format("({}) + {} <= ({})", at.text, tile[d], extent.text));
  }
  // On a tile corner the offset within the tile is 0: the tile's first element is the grid's term alone.
  CExpr grid = cconst(0);
  for (size_t d = 0; d < r && !src.tile_strides.empty(); ++d)  // none: the layout's own shape, one tile
    grid = grid + (lo.base[d] / cconst(tile[d])) * src.tile_strides[d];
  t.first = e.fresh("tile_first");
  e.line(fmt::format("const tv_i64 {} = {};", t.first, grid.text));
  t.src_bytes = byte_offset(cvar(t.first), B).text;
  cond.push_back(fmt::format("(unsigned long long)({} + {}) % {} == 0", src.ptr, t.src_bytes, align_bytes));
  for (const std::string& c : cond) t.condition += (t.condition.empty() ? "" : " && ") + c;
  return t;
}

namespace {

bool emit_memory_order_copy(Emitter& e, const ir::InstStmt& s, const ir::CopyAsyncInst& n,
                            const layout::Index& tile) {
  const MemTensor& dst = e.mem(n.dst.tensor);
  const MemTensor& src = e.mem(n.src.tensor);
  const int B = dst.dtype.bits();
  int64_t elements = 1;
  for (int64_t x : tile) elements *= x;
  int vbytes = 0;
  for (int b : {16, 8, 4})
    if (vbytes == 0 && (elements * B) % (8 * b) == 0) vbytes = b;
  if (vbytes == 0) return false;
  const std::optional<TiledCopy> t = tiled_copy(e, dst, n.dst, src, n.src, tile, vbytes);
  if (!t) return false;
  const int64_t chunks = elements * B / 8 / vbytes;
  const int64_t per_thread = (chunks + e.threads_ - 1) / e.threads_;
  e.note(s,
         fmt::format("a whole tile of a tiled global in the shared tile's order: cp.async of {} bytes as it "
                     "lies in memory ({} chunks over {} threads) where on a tile and inside",
                     vbytes, chunks, e.threads_));
  e.open(fmt::format("if ({})", t->condition));
  const std::string dp = e.fresh("dp");
  e.line(fmt::format("const tv_u32 {} = tv_smem_addr({}) + (tv_u32){};", dp, dst.ptr,
                     byte_offset(t->dst_offset, B).text));
  const std::string sp = e.fresh("sp");
  e.line(fmt::format("const tv_u8* const {} = {} + {};", sp, src.ptr, t->src_bytes));
  e.line("#pragma unroll");
  e.open(fmt::format("for (int k = 0; k < {}; ++k)", per_thread));
  e.line(fmt::format("const int c = k * {} + t;", e.threads_));
  const bool even = chunks % e.threads_ == 0;
  if (!even) e.line(fmt::format("if (c < {}) {{", chunks)), ++e.indent_;
  e.line(fmt::format("tv_cp_async_shared<{}>({} + (tv_u32)c * {}, {} + (tv_i64)c * {});", vbytes, dp, vbytes,
                     sp, vbytes));
  if (!even) e.close();
  e.close();
  e.close("} else {");
  ++e.indent_;
  return true;
}

}  // namespace

void Emitter::emit_copy_async(const ir::InstStmt& s, const ir::CopyAsyncInst& n) {
  const MemTensor& dst = mem(n.dst.tensor);
  const MemTensor& src = mem(n.src.tensor);
  const int B = dst.dtype.bits();
  // The tile: the kept dimensions of the shared view (constant extents).
  layout::Index tile;
  for (size_t d = 0; d < dst.shape.size(); ++d) {
    if (d < n.dst.slices.size() && n.dst.slices[d].kind == ir::Slice::Kind::Index) continue;
    tile.push_back(*dst.shape[d].value);
  }
  int64_t elements = 1;
  for (int64_t e : tile) elements *= e;
  const int drun = memory_run(dst, n.dst), srun = memory_run(src, n.src);
  int v = 1;
  for (int vb : {128, 64, 32}) {
    if (vb % B != 0 || tile.empty()) continue;
    const int cand = vb / B;
    if (cand < 1 || tile.back() % cand != 0 || drun % cand != 0 || (srun < (1 << 20) && srun % cand != 0))
      continue;
    v = cand;
    break;
  }
  const int vbytes = v * B / 8;
  const bool chunked = v * B >= 32;
  const int64_t chunks = elements / (chunked ? v : 1);
  const int64_t per_thread = (chunks + threads_ - 1) / threads_;
  const bool even = chunks % threads_ == 0;
  open("");
  auto element = [&](const std::vector<CExpr>& idx) {
    const ElementAccess da = access(dst, n.dst, {}, idx);
    const ElementAccess sa = access(src, n.src, {}, idx);
    line(fmt::format("tv_st<{}>({}, {}, ({}) ? tv_ld<{}>({}, {}) : 0ull);", B, dst.ptr, da.offset.text,
                     sa.inside, B, src.ptr, sa.offset.text));
  };
  // The chunks dealt round-robin: `body` gets the tile index of chunk c's first element.
  bool rare = false;  // the loop below is the fallback of a path that takes every interior tile: not unrolled
  auto chunk_loop = [&](const std::function<void(const std::vector<CExpr>&)>& body) {
    line(rare ? "#pragma unroll 1" : "#pragma unroll");
    open(fmt::format("for (int k = 0; k < {}; ++k)", per_thread));
    line(fmt::format("const int c = k * {} + t;", threads_));
    if (!even) line(fmt::format("if (c < {}) {{", chunks)), ++indent_;
    body(tile_index(tile, chunked ? cvar("c") * cconst(v) : cvar("c")));
    if (!even) close();
    close();
  };
  if (chunked) {
    note(s, fmt::format("cp.async of {} bytes ({} chunks over {} threads), synchronous per-element copies "
                        "where misaligned or at the edge",
                        vbytes, chunks, threads_));
  } else {
    note(s, fmt::format("synchronous per-element copies ({} elements over {} threads: no chunk of 4+ bytes "
                        "is contiguous)",
                        elements, threads_));
  }
  const bool ordered = emit_memory_order_copy(*this, s, n, tile);
  rare = ordered;
  const ChunkWalk walk{tile, v, threads_, per_thread, chunks};
  const bool fast = chunked && emit_fast_copy(*this, n, walk, false);
  const bool fast_ragged = fast && emit_fast_copy(*this, n, walk, true);
  chunk_loop([&](const std::vector<CExpr>& idx) {
    if (!chunked) return element(idx);
    const ElementAccess da = access(dst, n.dst, {}, idx);
    const ElementAccess sa = access(src, n.src, {}, idx);
    std::vector<CExpr> last = idx;
    last.back() = last.back() + cconst(v - 1);
    const ElementAccess sz = access(src, n.src, {}, last);
    line(fmt::format("const tv_i64 doff = {}, soff = {};", da.offset.text, sa.offset.text));
    line(fmt::format("const bool first_in = {}, last_in = {};", sa.inside, sz.inside));
    // A sub-byte chunk must also start on a byte: the address alone does not say so.
    const std::string on_byte = B % 8 == 0 ? "" : fmt::format("soff % {} == 0 && ", 8 / B);
    line(
        fmt::format("const bool aligned = doff % {0} == 0 && {4}(((unsigned long long)({1}) + (unsigned long "
                    "long)soff * {2} / 8) % {3} == 0);",
                    v, src.ptr, B, vbytes, on_byte));
    open("if (aligned && first_in && last_in)");
    line(fmt::format("tv_cp_async<{}>({} + doff * {} / 8, {} + soff * {} / 8, {});", vbytes, dst.ptr, B,
                     src.ptr, B, vbytes));
    close("} else if (aligned && !first_in && !last_in) {");
    ++indent_;
    line(fmt::format("tv_cp_async<{}>({} + doff * {} / 8, {}, 0);  // wholly outside: zero fill", vbytes,
                     dst.ptr, B, src.ptr));
    close("} else {");
    ++indent_;
    line("#pragma unroll");
    open(fmt::format("for (int e = 0; e < {}; ++e)", v));
    std::vector<CExpr> eidx = idx;
    eidx.back() = eidx.back() + cvar("e");
    element(eidx);
    close();
    close();
  });
  if (fast_ragged) close();
  if (fast) close();
  if (ordered) close();
  close();
}

}  // namespace tilevm::codegen::cuda
