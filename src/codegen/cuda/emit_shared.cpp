// Shared tensors: AllocateShared places the tensor at the range its instruction records
// (transform/plan_shared_memory.h) in the block's dynamic shared memory; FreeShared is a no-op at run time
// (the plan already reused the space). LoadShared may use ldmatrix: when the register layout divides by an
// ldmatrix atom (target/atoms.h) and every 8-element row of the atom is 16 contiguous bytes in shared memory.
#include <fmt/format.h>

#include <algorithm>

#include "emitter.h"
#include "tilevm/support/error.h"
#include "tilevm/target/atoms.h"

namespace tilevm::codegen::cuda {

void Emitter::emit_allocate_shared(const ir::InstStmt& s, const ir::AllocateSharedInst& n) {
  if (s.results.empty()) return;
  const ir::Var& var = s.results[0];
  const ir::TensorType& t = *var->type.tensor;
  MemTensor m;
  m.scope = ir::Scope::Shared;
  m.dtype = n.dtype;
  m.layout = *t.layout;
  for (int64_t e : t.layout->shape()) m.shape.push_back(cconst(e));
  if (!n.placement) unsupported(s, "the shared tensor is not placed (run transform::lower first)");
  const int64_t off = n.placement->offset;
  const int64_t end = off + n.placement->bytes;
  m.ptr = fmt::format("(tv_smem + {})", off);
  m.ptr_align = std::min<int64_t>(pow2_divisor(cconst(off)), 128);  // tv_smem is __align__(128)
  mems_[var.get()] = m;
  note(s, fmt::format("shared bytes [{}, {})", off, end));
  // The planner lets this tensor reuse bytes of a tensor that is dead here. The program needs no
  // Synchronize between the two (they are different tensors), but the hardware does: the other tensor's
  // last reads, in other threads, must finish before anything is written here.
  for (const auto& [other, range] : shared_ranges_) {
    if (other == &n) continue;
    if (range.offset < end && off < range.offset + range.bytes) {
      line(
          "__syncthreads();  // this tensor reuses the shared bytes of a dead one: its readers finish first");
      break;
    }
  }
}

// ldmatrix.x4/x2/x1 for 16-bit elements. The quotient of the register layout by the atom says which 8x8
// matrices (in units of the atom's tile) warp w loads into which slots; lane l supplies the address of row
// l % 8 of matrix l / 8 (for x4; lanes beyond the matrices repeat). The rows must be contiguous and 16-byte
// aligned in shared memory: the layout divides by local(1, 8) and the view's column origin is a multiple of
// 8 (checked at run time, falling back to per-element loads, unless the divisibility analysis proves it).
bool Emitter::try_ldmatrix(const ir::InstStmt& s, const ir::LoadInst& n, const MemTensor& m,
                           const RegInfo& out) {
  if (m.dtype.bits() != 16 || out.layout.rank() != 2 || memory_run(m, n.src) % 8 != 0) return false;
  for (const target::LdmatrixAtom& atom : target::ldmatrix_atoms()) {
    if (atom.num_matrices != 4) continue;
    layout::Layout q;
    try {
      q = layout::divide(out.layout, atom.layout);
    } catch (const Error&) {
      continue;
    }
    if (q.num_threads() * 32 != out.layout.num_threads()) continue;
    const int64_t per = atom.layout.num_locals();      // slots per atom (8 for x4)
    const layout::Index ashape = atom.layout.shape();  // 16 x 16
    // Alignment is block-uniform: it depends only on the view origin and the offset.
    std::vector<CExpr> zero{cconst(0), cconst(0)};
    const ElementAccess a0 = access(m, n.src, n.offset, zero);
    const bool proven = divisible(a0.base.back(), 8) && m.ptr_align % 16 == 0;
    note(s, fmt::format("ldmatrix.x{} ({} per warp), {}", atom.num_matrices, q.num_locals(),
                        proven ? "rows 16-byte aligned by construction"
                               : "per-element where the rows are not 16-byte aligned"));
    open("");
    // Row and column of this lane's row address inside one atom: matrices go down the rows, then across.
    line("const int lane = t % 32, warp = t / 32;");
    line(fmt::format("const int mrow = (lane / 8) % {0} * 8 + lane % 8, mcol = (lane / {1}) * 8;",
                     atom.row_blocks(), 8 * atom.row_blocks()));
    line("(void)warp;");
    if (!proven) open(fmt::format("if (({}) % 8 == 0)", a0.base.back().text));
    line("#pragma unroll");
    open(fmt::format("for (int q = 0; q < {}; ++q)", q.num_locals()));
    std::vector<CExpr> qi = layout_index(q, cvar("warp"), cvar("q"));
    std::vector<CExpr> idx{qi[0] * cconst(ashape[0]) + cvar("mrow"),
                           qi[1] * cconst(ashape[1]) + cvar("mcol")};
    const ElementAccess a = access(m, n.src, n.offset, idx);
    // The shared-space base plus a 32-bit offset: the base is loop-invariant and the offset stays 32-bit.
    line(fmt::format("const tv_u32 addr = tv_smem_addr({}) + (tv_u32)(({}) * 2);", m.ptr, a.offset.text));
    line(fmt::format(
        "asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%0, %1, %2, %3}}, [%4];\\n\" : "
        "\"=r\"({0}[q * {1}]), "
        "\"=r\"({0}[q * {1} + 1]), \"=r\"({0}[q * {1} + 2]), \"=r\"({0}[q * {1} + 3]) : \"r\"(addr));",
        out.name, per / 2));
    close();
    if (proven) {
      close();
      return true;
    }
    close("} else {");
    ++indent_;
    line("#pragma unroll");
    open(fmt::format("for (int i = 0; i < {}; ++i)", out.layout.num_locals()));
    const ElementAccess e = access(m, n.src, n.offset, layout_index(out.layout, cvar("t"), cvar("i")));
    line(fmt::format("tv_set<16>({}, i, tv_ld<16>({}, {}));", out.name, m.ptr, e.offset.text));
    close();
    close();
    close();
    return true;
  }
  return false;
}

}  // namespace tilevm::codegen::cuda
