// CopyAsync(s, g): the whole shared view s is copied from the global view g at its origin; elements outside
// g are zero. The work is not split by a register layout, so the emitter chooses: chunks of v elements along
// the last dimension (v * bits = 128, 64 or 32, where both memories are contiguous) dealt round-robin to the
// threads, each chunk one cp.async of 16, 8 or 4 bytes (zero-filled through src-size when the chunk lies
// wholly outside g). A chunk that is misaligned or straddles g's edge, and every element when no chunk size
// fits, is copied synchronously element by element, which is allowed: the data may land early.
#include <fmt/format.h>

#include "emitter.h"
#include "tilevm/support/error.h"

namespace tilevm::codegen::cuda {

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
  open("");
  auto tile_index = [&](const CExpr& linear) {
    std::vector<CExpr> idx(tile.size(), cconst(0));
    CExpr rest = linear;
    for (size_t d = tile.size(); d-- > 0;) {
      idx[d] = d == 0 ? rest : rest % cconst(tile[d]);
      rest = rest / cconst(tile[d]);
    }
    return idx;
  };
  auto element = [&](const std::vector<CExpr>& idx) {
    const ElementAccess da = access(dst, n.dst, {}, idx);
    const ElementAccess sa = access(src, n.src, {}, idx);
    line(fmt::format("tv_st<{}>({}, {}, ({}) ? tv_ld<{}>({}, {}) : 0ull);", B, dst.ptr, da.offset.text,
                     sa.inside, B, src.ptr, sa.offset.text));
  };
  const int64_t per_thread = (chunks + threads_ - 1) / threads_;
  const bool even = chunks % threads_ == 0;
  if (chunked) {
    note(s, fmt::format("cp.async of {} bytes ({} chunks over {} threads), synchronous per-element copies "
                        "where misaligned or at the edge",
                        vbytes, chunks, threads_));
  } else {
    note(s, fmt::format("synchronous per-element copies ({} elements over {} threads: no chunk of 4+ bytes "
                        "is contiguous)",
                        elements, threads_));
  }
  line("#pragma unroll");
  open(fmt::format("for (int k = 0; k < {}; ++k)", per_thread));
  line(fmt::format("const int c = k * {} + t;", threads_));
  if (!even) line(fmt::format("if (c < {}) {{", chunks)), ++indent_;
  if (chunked) {
    const std::vector<CExpr> idx = tile_index(cvar("c") * cconst(v));
    const ElementAccess da = access(dst, n.dst, {}, idx);
    const ElementAccess sa = access(src, n.src, {}, idx);
    std::vector<CExpr> last = idx;
    last.back() = last.back() + cconst(v - 1);
    const ElementAccess sz = access(src, n.src, {}, last);
    line(fmt::format("const tv_i64 doff = {}, soff = {};", da.offset.text, sa.offset.text));
    line(fmt::format("const bool first_in = {}, last_in = {};", sa.inside, sz.inside));
    line(
        fmt::format("const bool aligned = doff % {0} == 0 && (((unsigned long long)({1}) + (unsigned long "
                    "long)soff * {2} / 8) % {3} == 0);",
                    v, src.ptr, B, vbytes));
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
  } else {
    element(tile_index(cvar("c")));
  }
  if (!even) close();
  close();
  close();
}

}  // namespace tilevm::codegen::cuda
