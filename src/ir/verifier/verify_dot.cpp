// Dot, DotAsync and DotAsyncWait: operand scopes and views, transposes, shapes, dtypes; the SIMT rule for
// register operands; DotAsync's wgmma forms (target/wgmma.h), the one rule the emitter follows too.
#include <optional>
#include <string>

#include <fmt/format.h>

#include "tilevm/layout/holds.h"
#include "tilevm/support/error.h"
#include "tilevm/target/limits.h"
#include "tilevm/target/mma_selection.h"
#include "tilevm/target/wgmma.h"
#include "verifier_impl.h"

namespace tilevm::ir::verifier_detail {

namespace {

// The SIMT rule: a thread that computes c[..., m, n] holds a[..., m, k] and b[..., k, n] for every k.
// Returns an explanation of the first violation found, "" when the layouts satisfy it, or nullopt when that
// cannot be decided. Decided on the modes (layout/holds.h, check_dot_holds).
std::optional<std::string> simt_violation(const layout::Layout& la, const layout::Layout& lb,
                                          const layout::Layout& lc) {
  const int r = lc.rank();
  const int64_t K = la.shape()[static_cast<size_t>(r - 1)];
  layout::HoldsAnswer for_a, for_b;
  try {
    const layout::DotHolds holds = layout::check_dot_holds(la, lb, lc);
    for_a = holds.a;
    for_b = holds.b;
  } catch (const Error&) {  // c is swizzled: element by element, when small enough
    auto oa = ownership(la), ob = ownership(lb);
    if (!oa || !ob || lc.num_threads() * lc.num_locals() * K > (int64_t{1} << 26)) return std::nullopt;
    for (int64_t t = 0; t < lc.num_threads(); ++t) {
      for (int64_t i = 0; i < lc.num_locals(); ++i) {
        layout::Index ci = lc.map(t, i);
        layout::Index ai = ci, bi = ci;
        for (int64_t k = 0; k < K; ++k) {
          ai[static_cast<size_t>(r - 1)] = k;
          bi[static_cast<size_t>(r - 2)] = k;
          if (!oa->holds(t, linear_index(oa->shape, ai)))
            return fmt::format("thread {} computes c{} but does not hold a{}", t, index_text(ci),
                               index_text(ai));
          if (!ob->holds(t, linear_index(ob->shape, bi)))
            return fmt::format("thread {} computes c{} but does not hold b{}", t, index_text(ci),
                               index_text(bi));
        }
      }
    }
    return "";
  }
  if (!for_a.known || !for_b.known) return std::nullopt;
  // A missing element's first slot of c in that thread that needs it: same batch and row (a) or column (b).
  // A scan of one thread's slots. Of a and b, the lower (thread, slot) is reported, a first, as an
  // enumeration in that order would meet them.
  struct Witness {
    int64_t thread = 0, slot = 0;
    layout::Index ci;
  };
  auto witness = [&](const layout::HoldsAnswer& answer, bool of_a) -> std::optional<Witness> {
    if (!answer.missing) return std::nullopt;
    const int64_t t = answer.missing->thread;
    const layout::Index& e = answer.missing->element;
    for (int64_t i = 0; i < lc.num_locals(); ++i) {
      layout::Index ci = lc.map(t, i);
      bool same = true;
      for (int d = 0; d < r && same; ++d)
        if (d != (of_a ? r - 1 : r - 2))  // k's dimension: c's n for a, c's m for b
          same = ci[static_cast<size_t>(d)] == e[static_cast<size_t>(d)];
      if (same) return Witness{t, i, std::move(ci)};
    }
    TILEVM_ASSERT(false, "thread {} of layout {} computes no element of c that needs {}", t, layout_text(lc),
                  index_text(e));
  };
  const std::optional<Witness> wa = witness(for_a, true), wb = witness(for_b, false);
  if (!wa && !wb) return "";
  const bool report_a = wa && (!wb || std::pair(wa->thread, wa->slot) <= std::pair(wb->thread, wb->slot));
  const Witness& w = report_a ? *wa : *wb;
  return fmt::format("thread {} computes c{} but does not hold {}{}", w.thread, index_text(w.ci),
                     report_a ? "a" : "b", index_text((report_a ? for_a : for_b).missing->element));
}

// A register layout with its last two dimensions swapped.
layout::Layout transposed(const layout::Layout& lay) {
  std::vector<int> perm(static_cast<size_t>(lay.rank()));
  for (int d = 0; d < lay.rank(); ++d) perm[static_cast<size_t>(d)] = d;
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return layout::permute_dims(lay, perm);
}

}  // namespace

std::optional<Verifier::DotOperand> Verifier::dot_operand(const TensorArg& arg, const InstNode& n,
                                                          const std::string& role, bool transpose) {
  const TensorType* t = tensor_operand(arg, n, role);
  if (!t) return std::nullopt;
  DotOperand op;
  op.type = t;
  if (t->scope == Scope::Register && t->layout) {
    // Rank below 2 is check_dot_shapes' error, with all three shapes.
    try {
      op.layout = transpose && t->layout->rank() >= 2 ? transposed(*t->layout) : *t->layout;
    } catch (const Error& e) {
      diags_.error(pick(arg.loc, n.loc), "{}: cannot transpose {} '{}': {}", n.name(), role, arg.tensor->name,
                   e.what());
      return std::nullopt;
    }
    op.shape = op.layout->shape();
    return op;
  }
  if (t->scope != Scope::Shared || !t->layout) {
    diags_.error(pick(arg.loc, n.loc), "{}: {} must be a register or shared tensor, '{}' is {}", n.name(),
                 role, arg.tensor->name, type_text(arg.tensor->type));
    return std::nullopt;
  }
  // A shared operand is a rank-2 tile: the view indexes the leading dimensions (a stage of a pipeline) and
  // keeps the last two whole, so that its storage is the same pattern wherever the index points.
  const int rank = t->layout->rank();
  bool whole = rank >= 2;
  for (int d = 0; d < rank && whole; ++d) {
    const bool given = d < static_cast<int>(arg.slices.size());
    const Slice::Kind kind = given ? arg.slices[static_cast<size_t>(d)].kind : Slice::Kind::Full;
    whole = d < rank - 2 ? given && kind == Slice::Kind::Index : kind == Slice::Kind::Full;
  }
  if (!whole) {
    diags_.error(
        pick(arg.loc, n.loc),
        "{}: the shared {} '{}' of shape {} must be viewed as a whole [rows, cols] tile: index every "
        "leading dimension (e.g. tiles[stage]) and keep the last two whole",
        n.name(), role, arg.tensor->name, index_text(t->layout->shape()));
    return std::nullopt;
  }
  op.shared = true;
  const layout::Index& full = t->layout->shape();
  op.shape = {full[static_cast<size_t>(rank - 2)], full[static_cast<size_t>(rank - 1)]};
  if (transpose) std::swap(op.shape[0], op.shape[1]);
  return op;
}

// The shapes of op(a) @ op(b) + c; true when they agree (errors reported otherwise).
bool Verifier::check_dot_shapes(const InstNode& n, const DotOperand& a, const DotOperand& b,
                                const DotOperand& c) {
  const layout::Index &sa = a.shape, &sb = b.shape, &sc = c.shape;
  if (sa.size() < 2 || sb.size() < 2 || sc.size() < 2) {
    diags_.error(n.loc, "{}: a is {}, b is {} and c is {}; every operand needs rank 2 or more", n.name(),
                 index_text(sa), index_text(sb), index_text(sc));
    return false;
  }
  if (sa.size() != sb.size() || sa.size() != sc.size()) {
    diags_.error(n.loc, "{}: a is {}, b is {} and c is {}; the ranks must be equal", n.name(), index_text(sa),
                 index_text(sb), index_text(sc));
    return false;
  }
  const size_t r = sa.size();
  if (sa[r - 1] != sb[r - 2]) {
    diags_.error(n.loc, "{}: a is {} but b is {}; the inner dimensions must agree", n.name(), index_text(sa),
                 index_text(sb));
    return false;
  }
  if (sc[r - 2] != sa[r - 2] || sc[r - 1] != sb[r - 1]) {
    diags_.error(n.loc, "{}: a @ b is [{}, {}] but c is {}", n.name(), sa[r - 2], sb[r - 1], index_text(sc));
    return false;
  }
  for (size_t d = 0; d + 2 < r; ++d)
    if (sa[d] != sb[d] || sa[d] != sc[d]) {
      diags_.error(n.loc, "{}: the batch dimensions of a {}, b {} and c {} differ", n.name(), index_text(sa),
                   index_text(sb), index_text(sc));
      return false;
    }
  return true;
}

bool Verifier::check_dot_dtypes(const InstNode& n, DataType a, DataType b, DataType c) {
  if (a != b) {
    diags_.error(n.loc, "{}: a is {} but b is {}", n.name(), a.name(), b.name());
    return false;
  }
  if (a.is_bool()) {
    diags_.error(n.loc, "{}: cannot multiply bool tensors", n.name());
    return false;
  }
  if (a.is_float() && !c.is_float()) {
    diags_.error(n.loc, "{}: a and b are {} but c is {}; a float product accumulates in a float", n.name(),
                 a.name(), c.name());
    return false;
  }
  if (a.is_integer() && c != DataType::i32()) {
    diags_.error(n.loc, "{}: a and b are {} but c is {}; an integer product accumulates in i32", n.name(),
                 a.name(), c.name());
    return false;
  }
  return true;
}

void Verifier::check_dot(const DotInst& n) {
  const std::optional<DotOperand> a = dot_operand(n.a, n, "a", n.transpose_a);
  const std::optional<DotOperand> b = dot_operand(n.b, n, "b", n.transpose_b);
  const TensorType* ct = scoped_operand(n.c, n, "c", Scope::Register);
  if (!a || !b || !ct) {
    if (n.out) use_var(n.out, n.loc);
    return;
  }
  const DotOperand c{ct, false, ct->layout->shape(), *ct->layout};
  const bool ok = check_dot_dtypes(n, a->type->dtype, b->type->dtype, ct->dtype);
  const bool shapes_ok = check_dot_shapes(n, *a, *b, c);
  // Layouts: tensor cores when target::select_mma finds an atom whose fragments the operands divide, held
  // by every warp that needs them (whether in the same slots in every warp is the emitter's concern: it
  // falls back to SIMT through shared memory); else SIMT, where each thread needs them element by element.
  // A shared operand is readable by every thread, so the rule applies to register operands only.
  bool layouts_ok = true;
  const layout::Layout& lc = *c.layout;
  if (shapes_ok && !a->shared && !b->shared && a->layout->num_threads() == lc.num_threads() &&
      b->layout->num_threads() == lc.num_threads()) {
    const bool mma = target::select_mma(a->type->dtype, b->type->dtype, ct->dtype, *a->layout, *b->layout, lc,
                                        target::MmaDetail::HeldOnly)
                         .has_value();
    if (!mma) {
      const std::optional<std::string> why = simt_violation(*a->layout, *b->layout, lc);
      if (!why) {
        diags_.error(n.loc,
                     "Dot: the layouts divide no MMA atom, and for SIMT cannot be checked: c is swizzled and "
                     "the operands have more than 2^24 (thread, slot) pairs");
        layouts_ok = false;
      } else if (!why->empty()) {
        diags_.error(n.loc, "Dot: the layouts divide no MMA atom, and for SIMT {}", *why);
        layouts_ok = false;
      }
    }
  }
  check_out(n.out, n, ct->dtype, lc);
  if (ok && shapes_ok && layouts_ok) set_result(ct->dtype, lc);
}

// The K-major wgmma form of a shared operand (a as [M, K], b as [N, K]); reports and returns false when the
// storage is not one. `k_major`: whether the operand's storage has K as its last dimension.
bool Verifier::check_wgmma_operand(const InstNode& n, const TensorArg& arg, const DotOperand& op,
                                   const std::string& role, bool k_major) {
  if (!k_major) {
    diags_.error(
        pick(arg.loc, n.loc),
        "{}: {} '{}' is stored with M or N contiguous; wgmma here takes K-major operands only: give a "
        "as [M, K] and b as [N, K] with transpose_b=True",
        n.name(), role, arg.tensor->name);
    return false;
  }
  // A tensor larger than shared memory was refused at its allocation.
  if (!target::fits_shared(op.type->layout->num_locals(), op.type->dtype.bits())) return false;
  std::string why;
  if (!target::wgmma_operand_form(*op.type->layout, op.type->dtype.bits(), &why)) {
    diags_.error(pick(arg.loc, n.loc), "{}: the shared layout of {} '{}' is no wgmma operand form: {} ({})",
                 n.name(), role, arg.tensor->name, why, layout_text(*op.type->layout));
    return false;
  }
  return true;
}

void Verifier::check_dot_async(const DotAsyncInst& n) {
  const std::optional<DotOperand> a = dot_operand(n.a, n, "a", n.transpose_a);
  const std::optional<DotOperand> b = dot_operand(n.b, n, "b", n.transpose_b);
  const TensorType* ct = scoped_operand(n.c, n, "c", Scope::Register);
  if (!a || !b || !ct) return;
  const DotOperand c{ct, false, ct->layout->shape(), *ct->layout};
  if (!check_dot_dtypes(n, a->type->dtype, b->type->dtype, ct->dtype) || !check_dot_shapes(n, *a, *b, c))
    return;
  // DotAsync is wgmma: b in shared memory, a in shared memory or in registers (the RS form), the
  // accumulator an arrangement of wgmma fragments over whole warpgroups.
  if (!b->shared) {
    diags_.error(
        n.loc,
        "DotAsync: b must be a shared tensor (it is in registers); wgmma reads b from shared memory, "
        "a from shared memory or registers");
    return;
  }
  std::string why;
  const layout::Layout& lc = *c.layout;
  if (lc.num_threads() % 128 != 0) {
    diags_.error(n.loc, "DotAsync: c's layout has {} threads; a wgmma is issued by whole warpgroups of 128",
                 lc.num_threads());
    return;
  }
  const std::optional<target::WgmmaTiling> tiling = target::wgmma_tiling(a->type->dtype, ct->dtype, lc, &why);
  if (!tiling) {
    diags_.error(n.loc, "DotAsync: {} (c is {})", why, layout_text(lc));
    return;
  }
  if (a->shape[1] % 16 != 0) {
    diags_.error(n.loc, "DotAsync: K is {}; wgmma steps K by 16", a->shape[1]);
    return;
  }
  if (!a->shared) {
    // The RS form: a's fragments in the registers of the warpgroups whose accumulator blocks need them.
    if (n.transpose_a) {
      diags_.error(n.loc, "DotAsync: a in registers cannot be transposed (wgmma reads it as [M, K])");
      return;
    }
    if (!target::wgmma_register_a_slots(*a->layout, *tiling, &why)) {
      diags_.error(pick(n.a.loc, n.loc), "DotAsync: {} (a is {})", why, layout_text(*a->layout));
      return;
    }
  } else if (!check_wgmma_operand(n, n.a, *a, "a", !n.transpose_a)) {
    return;
  }
  check_wgmma_operand(n, n.b, *b, "b", n.transpose_b);
}

void Verifier::check_dot_async_wait(const DotAsyncWaitInst& n) {
  if (n.pending < 0 || n.pending > 7)
    diags_.error(n.loc, "DotAsyncWait: n={} is outside 0..7 (wgmma.wait_group's range)", n.pending);
}

}  // namespace tilevm::ir::verifier_detail
