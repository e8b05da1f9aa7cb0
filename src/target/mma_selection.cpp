#include "tilevm/target/mma_selection.h"

#include "tilevm/layout/holds.h"
#include "tilevm/support/error.h"

namespace tilevm::target {
namespace {

// The slot of q holding `index` in warp w, or -1.
int64_t slot_in(const layout::Layout& q, int64_t w, const layout::Index& index) {
  for (const auto& [t, i] : q.owners(index))
    if (t == w) return i;
  return -1;
}

// The selection of one atom, or nullopt when it does not divide or is not held.
std::optional<MmaSelection> try_atom(const MmaAtom& atom, const layout::Layout& la, const layout::Layout& lb,
                                     const layout::Layout& lc, MmaDetail detail) {
  MmaSelection sel;
  sel.atom = &atom;
  try {
    sel.qa = layout::divide(la, atom.layout_a);
    sel.qb = layout::divide(lb, atom.layout_b);
    sel.qc = layout::divide(lc, atom.layout_c);
  } catch (const Error&) {
    return std::nullopt;
  }
  const layout::Layout &qa = sel.qa, &qb = sel.qb, &qc = sel.qc;
  const int rank = lc.rank();
  if (rank < 2 || qa.rank() != rank || qb.rank() != rank || qc.rank() != rank) return std::nullopt;
  const int64_t warps = qc.num_threads();
  if (qa.num_threads() != warps || qb.num_threads() != warps) return std::nullopt;
  if (detail == MmaDetail::HeldOnly) {
    try {
      const layout::DotHolds holds = layout::check_dot_holds(qa, qb, qc);
      if (holds.a.known && holds.b.known) {
        if (!holds.a.holds() || !holds.b.holds()) return std::nullopt;
        sel.warp_uniform = false;
        return sel;
      }
    } catch (const Error&) {  // a swizzled quotient: the walk below decides
    }
  }
  const auto r = static_cast<size_t>(rank);
  const int64_t kq = qa.shape()[r - 1];
  // The a or b atom that meets result atom `ci` at (x, y) of the last two dimensions.
  auto operand_index = [&](const layout::Index& ci, int64_t x, int64_t y) {
    layout::Index idx(ci.begin(), ci.end() - 2);
    idx.push_back(x);
    idx.push_back(y);
    return idx;
  };
  sel.warp_uniform = true;
  for (int64_t k = 0; k < kq; ++k) {
    for (int64_t s = 0; s < qc.num_locals(); ++s) {
      int64_t sa = -1, sb = -1;
      for (int64_t w = 0; w < warps; ++w) {
        const layout::Index ci = qc.map(w, s);
        const int64_t xa = slot_in(qa, w, operand_index(ci, ci[r - 2], k));
        const int64_t xb = slot_in(qb, w, operand_index(ci, k, ci[r - 1]));
        if (xa < 0 || xb < 0) return std::nullopt;
        if (w > 0 && (xa != sa || xb != sb)) sel.warp_uniform = false;
        sa = xa;
        sb = xb;
      }
      if (sel.warp_uniform) sel.steps.push_back({s, sa, sb});
    }
  }
  if (!sel.warp_uniform) sel.steps.clear();
  return sel;
}

}  // namespace

std::optional<MmaSelection> select_mma(DataType a, DataType b, DataType c, const layout::Layout& la,
                                       const layout::Layout& lb, const layout::Layout& lc, MmaDetail detail) {
  std::optional<MmaSelection> held;
  for (const MmaAtom& atom : mma_atoms()) {
    if (atom.a != a || atom.b != b || atom.c != c) continue;
    std::optional<MmaSelection> sel = try_atom(atom, la, lb, lc, detail);
    if (!sel) continue;
    if (sel->warp_uniform || detail == MmaDetail::HeldOnly) return sel;
    if (!held) held = std::move(sel);
  }
  return held;
}

}  // namespace tilevm::target
