// Register compute: AllocateRegister, elementwise instructions, Cast and View.
//
// Elementwise arithmetic is exact in double (floats) or int64 (integers) and rounded once to the result
// dtype: floats to nearest even with overflow to inf where the type has it, integers wrapping. A scalar
// operand broadcasts; a tensor operand whose layout differs from the result's must hold, in thread t, every
// element that thread t's result slots need (a size-1 dimension broadcasts when the layouts allow it).
#include <cmath>
#include <span>

#include "float_minmax.h"
#include "machine.h"
#include "tilevm/ir/compare.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::interp::detail {

RegPtr Machine::allocate_register(const ir::AllocateRegisterInst& n) {
  RegPtr r = new_reg(n.dtype, n.layout);
  if (n.init) {
    std::fill(r->codes.begin(), r->codes.end(), scalar_to_code(n.dtype, eval(n.init)));
    std::fill(r->init.begin(), r->init.end(), 1);
    r->all_init = true;
  }
  return r;
}

RegPtr Machine::iota(const ir::IotaInst& n) {
  RegPtr r = new_reg(n.dtype, n.layout);
  const LayoutTable& table = *r->table;
  // The index along `dim` of row-major linear index l: (l / (product of the later extents)) % extent.
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(n.dim) + 1; d < table.shape.size(); ++d) inner *= table.shape[d];
  const int64_t extent = table.shape[static_cast<size_t>(n.dim)];
  for (size_t k = 0; k < r->codes.size(); ++k)
    r->codes[k] = scalar_to_code(n.dtype, ScalarValue{.is_float = false, .i = table.lin[k] / inner % extent});
  std::fill(r->init.begin(), r->init.end(), 1);
  r->all_init = true;
  return r;
}

namespace {

using ir::ElementwiseOp;

// One operand, read for every (t, i) of the result.
struct OperandValues {
  bool is_float = false;
  std::vector<double> f;
  std::vector<int64_t> i;
  const RegTensor* reg = nullptr;
  std::vector<uint64_t> codes;  // raw codes, for Where without conversion
};

// For slot k (thread k / locals) of a tensor laid out by `result`: the index into the codes of an operand
// laid out by `operand` that holds the same element in the same thread, with broadcasting (trailing
// alignment, size-1 dimensions of the operand read at 0); -1 where that thread does not hold it. Sets
// `element` to the operand's linear element index.
int64_t same_thread_slot(const LayoutTable& operand, const LayoutTable& result, size_t k, int64_t& element) {
  const int64_t t = static_cast<int64_t>(k) / result.locals;
  const Index& os = operand.shape;
  const size_t lead = result.shape.size() - os.size();
  const Index idx = unravel(result.lin[k], result.shape);
  element = 0;
  for (size_t d = 0; d < os.size(); ++d) element = element * os[d] + (os[d] == 1 ? 0 : idx[d + lead]);
  if (t >= operand.threads) return -1;
  const int32_t slot = operand.slots()[static_cast<size_t>(t * operand.elements + element)];
  return slot < 0 ? -1 : t * operand.locals + slot;
}

}  // namespace

RegPtr Machine::elementwise(const ir::ElementwiseInst& n, DataType dtype) {
  // The broadcast shape and the operand whose layout the result takes.
  std::vector<RegTensor*> regs(n.args.size(), nullptr);
  Index shape;
  for (size_t a = 0; a < n.args.size(); ++a) {
    if (!n.args[a].tensor) continue;
    regs[a] = &reg_operand(*n.args[a].tensor);
    check_init(*regs[a], *n.args[a].tensor);
    Index s = regs[a]->table->shape;
    const size_t rank = std::max(shape.size(), s.size());
    shape.insert(shape.begin(), rank - shape.size(), 1);
    s.insert(s.begin(), rank - s.size(), 1);
    for (size_t d = 0; d < rank; ++d) {
      if (shape[d] == 1) {
        shape[d] = s[d];
      } else if (s[d] != 1 && s[d] != shape[d]) {
        raise(n.loc, "{} operands of shapes {} and {} do not broadcast", n.name(), format_index(shape),
              format_index(s));
      }
    }
  }
  const RegTensor* owner = nullptr;
  for (RegTensor* r : regs)
    if (r && r->table->shape == shape && !owner) owner = r;
  if (!owner) raise(n.loc, "{}: no operand has the broadcast shape {}", n.name(), format_index(shape));

  RegPtr out = new_reg(dtype, owner->table->layout);
  const LayoutTable& tab = *out->table;
  const size_t N = out->codes.size();
  const int64_t m = tab.locals;

  // Read every operand at every (t, i) of the result.
  std::vector<OperandValues> vals(n.args.size());
  bool any_float = dtype.is_float();
  for (size_t a = 0; a < n.args.size(); ++a) {
    OperandValues& v = vals[a];
    if (!regs[a]) {
      ScalarValue s = eval(n.args[a].scalar);
      v.is_float = s.is_float;
      if (s.is_float) {
        v.f.assign(N, s.f);
      } else {
        v.i.assign(N, s.i);
      }
      v.codes.assign(N, scalar_to_code(dtype, s));
    } else {
      const RegTensor& r = *regs[a];
      v.reg = &r;
      v.is_float = r.dtype.is_float();
      v.codes.resize(N);
      if (r.table == &tab) {
        v.codes = r.codes;
      } else {
        for (size_t k = 0; k < N; ++k) {
          int64_t l = 0;
          const int64_t from = same_thread_slot(*r.table, tab, k, l);
          if (from < 0) {
            raise(n.loc,
                  "{}: thread {} needs element {} of '{}', which it does not hold (the layouts do not allow "
                  "this broadcast)",
                  n.name(), static_cast<int64_t>(k) / m, format_index(unravel(l, r.table->shape)),
                  n.args[a].tensor->tensor->name);
          }
          v.codes[k] = r.codes[static_cast<size_t>(from)];
        }
      }
      if (v.is_float) {
        v.f.resize(N);
        for (size_t k = 0; k < N; ++k) v.f[k] = decode(r.dtype, v.codes[k]);
      } else {
        v.i.resize(N);
        for (size_t k = 0; k < N; ++k) v.i[k] = code_to_int(r.dtype, v.codes[k]);
      }
    }
    if (n.op != ElementwiseOp::Where || a > 0) any_float = any_float || v.is_float;
  }
  auto as_double = [&](size_t a, size_t k) {
    return vals[a].is_float ? vals[a].f[k] : static_cast<double>(vals[a].i[k]);
  };

  if (n.op == ElementwiseOp::Where) {
    for (size_t k = 0; k < N; ++k) {
      const bool c = vals[0].is_float ? vals[0].f[k] != 0.0 : vals[0].i[k] != 0;
      const size_t a = c ? 1 : 2;
      if (regs[a] && regs[a]->dtype == dtype) {
        out->codes[k] = vals[a].codes[k];
      } else if (vals[a].is_float) {
        out->codes[k] = round_float_result(dtype, vals[a].f[k]);
      } else {
        out->codes[k] = wrap_int_result(dtype, vals[a].i[k]);
      }
    }
  } else if (n.op == ElementwiseOp::Fma) {
    // One rounding of the exact a * b + c in the result type (the verifier allows f32 and f64 only):
    // fmaf rounds once to f32, where fma in double and a second rounding to f32 could round twice. A NaN
    // result is the canonical NaN, as for every other arithmetic result.
    for (size_t k = 0; k < N; ++k) {
      const double x = as_double(0, k), y = as_double(1, k), z = as_double(2, k);
      const double r = dtype == DataType::f32()
                           ? std::fmaf(static_cast<float>(x), static_cast<float>(y), static_cast<float>(z))
                           : std::fma(x, y, z);
      out->codes[k] = round_float_result(dtype, r);  // exact: r is already a value of the type
    }
  } else if (ir::is_comparison(n.op)) {
    for (size_t k = 0; k < N; ++k) {
      const bool r = any_float ? *ir::compare(n.op, as_double(0, k), as_double(1, k))
                               : *ir::compare(n.op, vals[0].i[k], vals[1].i[k]);
      out->codes[k] = r ? 1 : 0;
    }
  } else if (any_float || ir::is_float_only(n.op)) {
    for (size_t k = 0; k < N; ++k) {
      const double x = as_double(0, k);
      const double y = n.args.size() > 1 ? as_double(1, k) : 0.0;
      double r = 0;
      switch (n.op) {
        case ElementwiseOp::Add:
          r = x + y;
          break;
        case ElementwiseOp::Sub:
          r = x - y;
          break;
        case ElementwiseOp::Mul:
          r = x * y;
          break;
        case ElementwiseOp::Div:
          r = x / y;
          break;
        case ElementwiseOp::Mod:
          r = std::fmod(x, y);
          break;
        case ElementwiseOp::Max:
          r = float_max(x, y);
          break;
        case ElementwiseOp::Min:
          r = float_min(x, y);
          break;
        case ElementwiseOp::Neg:
          r = -x;
          break;
        case ElementwiseOp::Abs:
          r = std::fabs(x);
          break;
        case ElementwiseOp::Exp:
          r = std::exp(x);
          break;
        case ElementwiseOp::Exp2:
          r = std::exp2(x);
          break;
        case ElementwiseOp::Log:
          r = std::log(x);
          break;
        case ElementwiseOp::Sqrt:
          r = std::sqrt(x);
          break;
        case ElementwiseOp::Rsqrt:
          r = 1.0 / std::sqrt(x);
          break;
        case ElementwiseOp::Erf:
          r = std::erf(x);
          break;
        case ElementwiseOp::Tanh:
          r = std::tanh(x);
          break;
        default:
          break;
      }
      out->codes[k] = round_float_result(dtype, r);
    }
  } else {
    for (size_t k = 0; k < N; ++k) {
      const int64_t x = vals[0].i[k];
      const int64_t y = n.args.size() > 1 ? vals[1].i[k] : 0;
      const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
      int64_t r = 0;
      switch (n.op) {
        case ElementwiseOp::Add:
          r = static_cast<int64_t>(ux + uy);
          break;
        case ElementwiseOp::Sub:
          r = static_cast<int64_t>(ux - uy);
          break;
        case ElementwiseOp::Mul:
          r = static_cast<int64_t>(ux * uy);
          break;
        case ElementwiseOp::Div:
        case ElementwiseOp::Mod:
          if (y == 0) {
            raise(n.loc, "integer division by zero in {} (element {}, thread {})", n.name(),
                  format_index(unravel(tab.lin[k], tab.shape)), static_cast<int64_t>(k) / m);
          }
          if (y == -1) {
            r = n.op == ElementwiseOp::Div ? static_cast<int64_t>(0 - ux) : 0;
          } else {
            r = n.op == ElementwiseOp::Div ? x / y : x % y;
          }
          break;
        case ElementwiseOp::Max:
          r = std::max(x, y);
          break;
        case ElementwiseOp::Min:
          r = std::min(x, y);
          break;
        case ElementwiseOp::Neg:
          r = static_cast<int64_t>(0 - ux);
          break;
        case ElementwiseOp::Abs:
          r = x < 0 ? static_cast<int64_t>(0 - ux) : x;
          break;
        default:
          break;
      }
      out->codes[k] = wrap_int_result(dtype, r);
    }
  }
  std::fill(out->init.begin(), out->init.end(), 1);
  out->all_init = true;
  return out;
}

RegPtr Machine::cast(const ir::CastInst& n) {
  RegTensor& src = reg_operand(n.src);
  check_init(src, n.src);
  RegPtr out = new_reg(n.dtype, n.layout ? *n.layout : src.table->layout);
  const size_t N = src.codes.size();
  // With layout=, slot k of the result converts the slot of the same thread that holds the same element.
  std::vector<size_t> from(N);
  for (size_t k = 0; k < N; ++k) from[k] = k;
  if (out->table != src.table) {
    const LayoutTable &in = *src.table, &to = *out->table;
    if (in.shape != to.shape || in.threads != to.threads || in.locals != to.locals)
      raise(n.loc, "Cast: layout= has {} threads x {} slots, the operand {} x {}", to.threads, to.locals,
            in.threads, in.locals);
    for (size_t k = 0; k < N; ++k) {
      int64_t element = 0;
      const int64_t j = same_thread_slot(in, to, k, element);
      if (j < 0)
        raise(n.loc, "Cast: thread {} does not hold the element of slot {} of layout=", k / to.locals,
              k % to.locals);
      from[k] = static_cast<size_t>(j);
    }
  }
  if (src.dtype.bits() <= 8 && N > 256) {
    // A table over every source code.
    std::vector<uint64_t> lut(size_t{1} << src.dtype.bits());
    for (size_t c = 0; c < lut.size(); ++c) lut[c] = cast_code(src.dtype, n.dtype, c);
    for (size_t k = 0; k < N; ++k) out->codes[k] = lut[src.codes[from[k]] & (lut.size() - 1)];
  } else {
    for (size_t k = 0; k < N; ++k) out->codes[k] = cast_code(src.dtype, n.dtype, src.codes[from[k]]);
  }
  std::fill(out->init.begin(), out->init.end(), 1);
  out->all_init = true;
  return out;
}

RegPtr Machine::view(const ir::ViewInst& n) {
  RegTensor& src = reg_operand(n.src);
  const DataType dtype = n.dtype.value_or(src.dtype);
  RegPtr out = new_reg(dtype, n.layout ? *n.layout : src.table->layout);
  const int64_t T = src.table->threads, m_in = src.table->locals, m_out = out->table->locals;
  const int b_in = src.dtype.bits(), b_out = dtype.bits();
  if (out->table->threads != T || m_in * b_in != m_out * b_out) {
    raise(n.loc, "View of {} x {} bits per thread ({} threads) as {} x {} bits per thread ({} threads)", m_in,
          src.dtype.name(), T, m_out, dtype.name(), out->table->threads);
  }
  // Each thread's registers are one packed little-endian bit stream in slot order (docs/language.md
  // section 5).
  std::vector<uint8_t> stream(static_cast<size_t>(packed_bytes(b_in, m_in)));
  for (int64_t t = 0; t < T; ++t) {
    std::span<const uint64_t> in(src.codes.data() + t * m_in, static_cast<size_t>(m_in));
    pack(b_in, in, stream);
    unpack(b_out, stream, std::span<uint64_t>(out->codes.data() + t * m_out, static_cast<size_t>(m_out)));
    for (int64_t j = 0; j < m_out; ++j) {
      // Initialized when every source element that shares its bits is.
      const int64_t first = j * b_out / b_in, last = ((j + 1) * b_out - 1) / b_in;
      uint8_t ok = 1;
      for (int64_t e = first; e <= last; ++e) ok &= src.init[static_cast<size_t>(t * m_in + e)];
      out->init[static_cast<size_t>(t * m_out + j)] = ok;
    }
  }
  out->all_init = src.all_init;
  return out;
}

}  // namespace tilevm::interp::detail
