// C expressions of layouts. A layout is a Kronecker product of factors (mode layouts and swizzles), so
//   f(t, i) = sum over factors k of  factor_k(t_k, i_k) * S_inner(k)     (elementwise per dimension)
// where t_k = (t / T_inner(k)) % T_k and i_k = (i / m_inner(k)) % m_k, the "inner" quantities being the
// products over the factors after k. A mode factor maps digits: digit = (t / stride) % size for a spatial
// mode, (i / stride) % size for a local one, and each dimension's index is its digits in mixed radix.
// Memory layouts (T = 1) are inverted the same way, factor by factor. Every operator folds constants, so at
// a constant slot the expression is a small function of the thread index.
#include <algorithm>
#include <bit>

#include "emitter.h"
#include "tilevm/support/error.h"
#include "tilevm/type/packing.h"

namespace tilevm::codegen::cuda {

namespace {
int log2_of_constant(int64_t v) {
  return v == 0 ? kMaxLog2Div : std::min(std::countr_zero(static_cast<uint64_t>(v)), kMaxLog2Div);
}
int log2_of_power(int64_t v) {  // log2 of a positive power of two, else -1
  return v > 0 && std::has_single_bit(static_cast<uint64_t>(v)) ? std::countr_zero(static_cast<uint64_t>(v))
                                                                : -1;
}
int log2_sum(int a, int b) {
  return std::min(a + b, kMaxLog2Div);
}
// Exact division by 2^j: the quotient keeps log2_div - j; otherwise nothing is known.
int log2_quotient(int a, int j) {
  return j >= 0 && a >= j ? a - j : 0;
}
}  // namespace

CExpr cconst(int64_t v) {
  return {v, v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v), log2_of_constant(v)};
}
CExpr cvar(std::string text, int log2_div) {
  return {std::nullopt, std::move(text), std::clamp(log2_div, 0, kMaxLog2Div)};
}

int64_t pow2_divisor(const CExpr& e) {
  return int64_t{1} << e.log2_div;
}
bool divisible(const CExpr& e, int64_t m) {
  const int j = log2_of_power(m);
  TILEVM_ASSERT(j >= 0, "divisible by {}: not a positive power of two", m);
  return e.log2_div >= j;
}

int log2_divisor(const ir::Expr& e) {
  if (!e || !e->type.is_integer()) return 0;
  if (const auto* imm = e->as<ir::IntImm>()) return log2_of_constant(imm->value);
  if (const auto* u = e->as<ir::UnaryExpr>()) return u->op == ir::UnaryOp::Neg ? log2_divisor(u->a) : 0;
  const auto* b = e->as<ir::BinaryExpr>();
  if (!b) return 0;
  const int x = log2_divisor(b->a), y = log2_divisor(b->b);
  const std::optional<int64_t> k = ir::as_const_int(b->b);
  switch (b->op) {
    case ir::BinaryOp::Add:
    case ir::BinaryOp::Sub:
    case ir::BinaryOp::Mod:
    case ir::BinaryOp::BitOr:
    case ir::BinaryOp::BitXor:
    case ir::BinaryOp::Min:
    case ir::BinaryOp::Max:
      return std::min(x, y);
    case ir::BinaryOp::BitAnd:
      return std::max(x, y);
    case ir::BinaryOp::Mul:
      return log2_sum(x, y);
    case ir::BinaryOp::Div:
      return k ? log2_quotient(x, log2_of_power(*k)) : 0;
    case ir::BinaryOp::Shl:
      return k && *k >= 0 && *k < 64 ? log2_sum(x, static_cast<int>(*k)) : 0;
    case ir::BinaryOp::Shr:
      return k && *k >= 0 && *k < 64 ? log2_quotient(x, static_cast<int>(*k)) : 0;
    default:
      return 0;
  }
}

namespace {
CExpr bin(const CExpr& a, const char* op, const CExpr& b, int log2_div) {
  return cvar("(" + a.text + " " + op + " " + b.text + ")", log2_div);
}
bool is(const CExpr& e, int64_t v) {
  return e.value && *e.value == v;
}
}  // namespace

CExpr operator+(const CExpr& a, const CExpr& b) {
  if (a.value && b.value) return cconst(*a.value + *b.value);
  if (is(a, 0)) return b;
  if (is(b, 0)) return a;
  return bin(a, "+", b, std::min(a.log2_div, b.log2_div));
}
CExpr operator-(const CExpr& a, const CExpr& b) {
  if (a.value && b.value) return cconst(*a.value - *b.value);
  if (is(b, 0)) return a;
  return bin(a, "-", b, std::min(a.log2_div, b.log2_div));
}
CExpr operator*(const CExpr& a, const CExpr& b) {
  if (a.value && b.value) return cconst(*a.value * *b.value);
  if (is(a, 0) || is(b, 0)) return cconst(0);
  if (is(a, 1)) return b;
  if (is(b, 1)) return a;
  return bin(a, "*", b, log2_sum(a.log2_div, b.log2_div));
}
CExpr operator/(const CExpr& a, const CExpr& b) {
  if (a.value && b.value && *b.value != 0) return cconst(*a.value / *b.value);
  if (is(a, 0)) return cconst(0);
  if (is(b, 1)) return a;
  return bin(a, "/", b, b.value ? log2_quotient(a.log2_div, log2_of_power(*b.value)) : 0);
}
CExpr operator%(const CExpr& a, const CExpr& b) {
  if (a.value && b.value && *b.value != 0) return cconst(*a.value % *b.value);
  if (is(a, 0) || is(b, 1)) return cconst(0);
  return bin(a, "%", b, std::min(a.log2_div, b.log2_div));
}
CExpr operator^(const CExpr& a, const CExpr& b) {
  if (a.value && b.value) return cconst(*a.value ^ *b.value);
  if (is(a, 0)) return b;
  if (is(b, 0)) return a;
  return bin(a, "^", b, std::min(a.log2_div, b.log2_div));
}
CExpr shr(const CExpr& a, int64_t s) {
  if (a.value) return cconst(*a.value >> s);
  if (s == 0) return a;
  return cvar("(" + a.text + " >> " + std::to_string(s) + ")",
              log2_quotient(a.log2_div, static_cast<int>(s)));
}

namespace {

using layout::Index;
using layout::Layout;
using layout::ModeLayout;

int64_t entry_size(const ModeLayout& ml, int64_t entry) {
  return entry < 0 ? -entry : ml.mode_size[static_cast<size_t>(entry)];
}

// Digits of every mode of `ml` for thread t and slot i (replication digits are dropped).
std::vector<CExpr> mode_digits(const ModeLayout& ml, const CExpr& t, const CExpr& i) {
  std::vector<CExpr> digit(ml.mode_size.size(), cconst(0));
  auto assign = [&](const std::vector<int64_t>& list, const CExpr& x) {
    int64_t stride = 1;
    for (size_t p = list.size(); p-- > 0;) {
      const int64_t size = entry_size(ml, list[p]);
      CExpr d = x / cconst(stride);
      if (p != 0) d = d % cconst(size);  // the outermost digit needs no modulo
      if (list[p] >= 0) digit[static_cast<size_t>(list[p])] = d;
      stride *= size;
    }
  };
  assign(ml.spatial, t);
  assign(ml.local, i);
  return digit;
}

std::vector<CExpr> mode_index(const ModeLayout& ml, const CExpr& t, const CExpr& i) {
  const std::vector<CExpr> digit = mode_digits(ml, t, i);
  std::vector<CExpr> idx(static_cast<size_t>(ml.rank()), cconst(0));
  std::vector<int64_t> scale(static_cast<size_t>(ml.rank()), 1);
  for (size_t k = ml.mode_size.size(); k-- > 0;) {
    const size_t d = static_cast<size_t>(ml.mode_dim[k]);
    idx[d] = idx[d] + digit[k] * cconst(scale[d]);
    scale[d] *= ml.mode_size[k];
  }
  return idx;
}

CExpr mode_offset(const ModeLayout& ml, const std::vector<CExpr>& index) {
  // Digits of each dimension's index, inner mode first.
  std::vector<CExpr> digit(ml.mode_size.size(), cconst(0));
  std::vector<int64_t> scale(static_cast<size_t>(ml.rank()), 1);
  std::vector<bool> outermost(ml.mode_size.size(), false);
  for (size_t k = 0; k < ml.mode_size.size(); ++k)
    outermost[k] = k == 0 || ml.mode_dim[k - 1] != ml.mode_dim[k];
  for (size_t k = ml.mode_size.size(); k-- > 0;) {
    const size_t d = static_cast<size_t>(ml.mode_dim[k]);
    CExpr x = index[d] / cconst(scale[d]);
    if (!outermost[k]) x = x % cconst(ml.mode_size[k]);
    digit[k] = x;
    scale[d] *= ml.mode_size[k];
  }
  CExpr off = cconst(0);
  int64_t stride = 1;
  for (size_t p = ml.local.size(); p-- > 0;) {
    off = off + digit[static_cast<size_t>(ml.local[p])] * cconst(stride);
    stride *= ml.mode_size[static_cast<size_t>(ml.local[p])];
  }
  return off;
}

struct FactorShape {
  Index shape;
  int64_t threads, locals;
};

FactorShape factor_shape(const Layout::Factor& f) {
  if (f.modes) return {f.modes->shape, f.modes->num_threads(), f.modes->num_locals()};
  return {f.swizzle->inner->shape(), f.swizzle->inner->num_threads(), f.swizzle->inner->num_locals()};
}

std::vector<CExpr> factor_index(const Layout::Factor& f, const CExpr& t, const CExpr& i) {
  if (f.modes) return mode_index(*f.modes, t, i);
  const layout::Swizzle& s = *f.swizzle;
  std::vector<CExpr> idx = layout_index(*s.inner, t, i);
  const int other = 1 - s.dim;
  const int64_t n = s.inner->shape()[static_cast<size_t>(s.dim)];
  idx[static_cast<size_t>(s.dim)] =
      idx[static_cast<size_t>(s.dim)] ^ (shr(idx[static_cast<size_t>(other)], s.log_step) % cconst(n));
  return idx;
}

CExpr factor_offset(const Layout::Factor& f, const std::vector<CExpr>& index) {
  if (f.modes) return mode_offset(*f.modes, index);
  const layout::Swizzle& s = *f.swizzle;
  std::vector<CExpr> pre = index;  // the swizzle is an involution for a fixed other coordinate
  const int other = 1 - s.dim;
  const int64_t n = s.inner->shape()[static_cast<size_t>(s.dim)];
  pre[static_cast<size_t>(s.dim)] =
      pre[static_cast<size_t>(s.dim)] ^ (shr(pre[static_cast<size_t>(other)], s.log_step) % cconst(n));
  return layout_offset(*s.inner, pre);
}

}  // namespace

std::vector<CExpr> layout_index(const Layout& f, const CExpr& t, const CExpr& i) {
  const size_t r = static_cast<size_t>(f.rank());
  std::vector<CExpr> idx(r, cconst(0));
  std::vector<int64_t> scale(r, 1);
  int64_t t_in = 1, m_in = 1;
  const auto& factors = f.factors();
  for (size_t k = factors.size(); k-- > 0;) {
    const FactorShape fs = factor_shape(factors[k]);
    CExpr tk = t / cconst(t_in), ik = i / cconst(m_in);
    if (k != 0) {
      tk = tk % cconst(fs.threads);
      ik = ik % cconst(fs.locals);
    }
    const std::vector<CExpr> fi = factor_index(factors[k], tk, ik);
    const size_t lead = r - fi.size();
    for (size_t d = 0; d < fi.size(); ++d) {
      idx[lead + d] = idx[lead + d] + fi[d] * cconst(scale[lead + d]);
      scale[lead + d] *= fs.shape[d];
    }
    t_in *= fs.threads;
    m_in *= fs.locals;
  }
  return idx;
}

CExpr layout_offset(const Layout& f, const std::vector<CExpr>& index) {
  const size_t r = static_cast<size_t>(f.rank());
  TILEVM_ASSERT(index.size() == r, "layout_offset of a rank-{} index in a rank-{} layout", index.size(), r);
  CExpr off = cconst(0);
  std::vector<int64_t> scale(r, 1);
  int64_t m_in = 1;
  const auto& factors = f.factors();
  for (size_t k = factors.size(); k-- > 0;) {
    const FactorShape fs = factor_shape(factors[k]);
    const size_t lead = r - fs.shape.size();
    std::vector<CExpr> fi(fs.shape.size(), cconst(0));
    for (size_t d = 0; d < fs.shape.size(); ++d) {
      CExpr x = index[lead + d] / cconst(scale[lead + d]);
      if (k != 0) x = x % cconst(fs.shape[d]);
      fi[d] = x;
      scale[lead + d] *= fs.shape[d];
    }
    off = off + factor_offset(factors[k], fi) * cconst(m_in);
    m_in *= fs.locals;
  }
  return off;
}

std::string primary_replica(const Layout& f, const CExpr& t) {
  std::string cond;
  int64_t t_in = 1;
  const auto& factors = f.factors();
  for (size_t k = factors.size(); k-- > 0;) {
    const FactorShape fs = factor_shape(factors[k]);
    if (factors[k].modes) {
      const ModeLayout& ml = *factors[k].modes;
      const CExpr tk = (t / cconst(t_in)) % cconst(fs.threads);
      int64_t stride = 1;
      for (size_t p = ml.spatial.size(); p-- > 0;) {
        const int64_t size = entry_size(ml, ml.spatial[p]);
        if (ml.spatial[p] < 0) {
          const CExpr digit = (tk / cconst(stride)) % cconst(size);
          cond += (cond.empty() ? "" : " && ") + std::string("(") + digit.text + " == 0)";
        }
        stride *= size;
      }
    }
    t_in *= fs.threads;
  }
  return cond.empty() ? "1" : cond;
}

std::string type_args(DataType t) {
  const int kind = t.is_bool()                         ? 0
                   : t.kind() == TypeKind::SignedInt   ? 1
                   : t.kind() == TypeKind::UnsignedInt ? 2
                                                       : 3;
  int specials = 0;
  if (t.is_float())
    specials = t.float_specials() == FloatSpecials::None      ? 0
               : t.float_specials() == FloatSpecials::NanOnly ? 1
                                                              : 2;
  return fmt::format("{}, {}, {}, {}, {}", kind, t.bits(), t.is_float() ? t.exponent_bits() : 0,
                     t.is_float() ? t.mantissa_bits() : 0, specials);
}

int64_t reg_words(DataType t, const Layout& f) {
  return std::max<int64_t>(1, (f.num_locals() * t.bits() + 31) / 32);
}

}  // namespace tilevm::codegen::cuda
