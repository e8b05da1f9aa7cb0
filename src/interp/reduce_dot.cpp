// Reductions and Dot. Both work on the logical tiles: each element is read from its first holder (replicas
// hold the same value), the result is computed exactly (double for floats, int64 for integers), rounded once
// to the result dtype and written to every (t, i) of the result layout, replicas included.
#include <cmath>

#include "float_minmax.h"
#include "machine.h"
#include "tilevm/support/int_math.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::interp::detail {

namespace {

// The codes of a register tile in row-major logical order (first holder of each element).
std::vector<uint64_t> logical_codes(const RegTensor& r) {
  const LayoutTable& tab = *r.table;
  std::vector<uint64_t> out(static_cast<size_t>(tab.elements), 0);
  std::vector<uint8_t> seen(static_cast<size_t>(tab.elements), 0);
  for (size_t k = 0; k < r.codes.size(); ++k) {
    const size_t l = static_cast<size_t>(tab.lin[k]);
    if (!seen[l]) {
      seen[l] = 1;
      out[l] = r.codes[k];
    }
  }
  return out;
}

template <typename T>
std::vector<T> logical_values(const RegTensor& r) {
  std::vector<uint64_t> codes = logical_codes(r);
  std::vector<T> out(codes.size());
  for (size_t l = 0; l < codes.size(); ++l) {
    if constexpr (std::is_same_v<T, double>) {
      out[l] = decode(r.dtype, codes[l]);
    } else {
      out[l] = code_to_int(r.dtype, codes[l]);
    }
  }
  return out;
}

// Writes logical results to every (t, i) of the result tile.
template <typename T, typename Round>
void scatter(RegTensor& out, const std::vector<T>& values, Round&& round) {
  std::vector<uint64_t> codes(values.size());
  for (size_t l = 0; l < values.size(); ++l) codes[l] = round(values[l]);
  for (size_t k = 0; k < out.codes.size(); ++k) out.codes[k] = codes[static_cast<size_t>(out.table->lin[k])];
  std::fill(out.init.begin(), out.init.end(), 1);
  out.all_init = true;
}

template <typename T>
std::vector<T> reduce_values(const std::vector<T>& in, const Index& shape, int dim, ir::ReduceOp op) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t n = shape[static_cast<size_t>(dim)];
  std::vector<T> out(static_cast<size_t>(outer * inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      T acc = in[static_cast<size_t>(o * n * inner + i)];
      for (int64_t j = 1; j < n; ++j) {
        const T x = in[static_cast<size_t>((o * n + j) * inner + i)];
        if (op == ir::ReduceOp::Sum) {
          if constexpr (std::is_same_v<T, int64_t>) {
            acc = static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(x));
          } else {
            acc += x;
          }
        } else if (op == ir::ReduceOp::Max) {
          if constexpr (std::is_same_v<T, double>) {
            acc = float_max(acc, x);
          } else {
            acc = std::max(acc, x);
          }
        } else {
          if constexpr (std::is_same_v<T, double>) {
            acc = float_min(acc, x);
          } else {
            acc = std::min(acc, x);
          }
        }
      }
      out[static_cast<size_t>(o * inner + i)] = acc;
    }
  }
  return out;
}

}  // namespace

RegPtr Machine::reduce(const ir::ReduceInst& n, const layout::Layout& result_layout) {
  RegTensor& src = reg_operand(n.src);
  check_init(src, n.src);
  const Index& shape = src.table->shape;
  if (n.dim < 0 || n.dim >= static_cast<int>(shape.size())) {
    raise(n.loc, "{} dim={} is out of range for a tensor of rank {}", n.name(), n.dim, shape.size());
  }
  RegPtr out = new_reg(src.dtype, result_layout);
  if (out->table->elements * shape[static_cast<size_t>(n.dim)] != src.table->elements) {
    raise(n.loc, "{}: the result layout has shape {}, which is not {} reduced along dim {}", n.name(),
          format_index(out->table->shape), format_index(shape), n.dim);
  }
  const DataType dt = src.dtype;
  if (dt.is_float()) {
    scatter(*out, reduce_values(logical_values<double>(src), shape, n.dim, n.op),
            [&](double v) { return round_float_result(dt, v); });
  } else {
    scatter(*out, reduce_values(logical_values<int64_t>(src), shape, n.dim, n.op),
            [&](int64_t v) { return wrap_int_result(dt, v); });
  }
  return out;
}

Machine::DotValues Machine::dot_operand(const ir::TensorArg& arg, bool transpose, int64_t async_seq) {
  DotValues v;
  Value& value = lookup(arg.tensor);
  if (value.kind == Value::Kind::Register) {
    const RegTensor& r = reg_operand(arg);
    check_init(r, arg);
    v.dtype = r.dtype;
    v.shape = r.table->shape;
    v.codes = logical_codes(r);
  } else {
    // A shared tile (the view keeps the last two dimensions whole): read as LoadShared reads, by the whole
    // block (kSeveral) for the race checker.
    SharedBuffer& s = shared_operand(arg);
    const Index& full = s.table->shape;
    if (full.size() < 2) raise(current_loc_, "the shared operand '{}' needs rank 2 or more", s.name);
    v.dtype = s.dtype;
    v.shape = {full[full.size() - 2], full[full.size() - 1]};
    const std::vector<int64_t> addrs = shared_addresses(arg, s, v.shape, Index{0, 0}, "read");
    v.codes.resize(addrs.size());
    for (size_t l = 0; l < addrs.size(); ++l) {
      const int64_t off = addrs[l];
      const size_t uo = static_cast<size_t>(off);
      if (s.pending[uo] >= 0) {
        raise(*current_loc_ptr_, "read of shared '{}' element {} before {} (issued at {})", s.name,
              shared_element(s, off), pending_wait_text(copies_[static_cast<size_t>(s.pending[uo])]),
              loc_text(*copies_[static_cast<size_t>(s.pending[uo])].loc));
      }
      if (options_.check_races) {
        check_shared_read(s, off, kSeveral, *current_loc_ptr_);
        // A DotAsync is a wgmma: the tensor cores read through the async proxy. (A synchronous Dot is one
        // only on some targets and operand forms, which the interpreter does not know.)
        if (async_seq > 0) check_async_proxy_read(s, off, *current_loc_ptr_, "DotAsync", "the tensor cores");
      }
      if (!s.init[uo])
        raise(*current_loc_ptr_, "read of uninitialized shared '{}' element {}", s.name,
              shared_element(s, off));
      v.codes[l] = get_code(s.bytes.data(), s.dtype.bits(), off);
      if (async_seq > 0) {
        if (s.dot_seq.empty()) s.dot_seq.assign(s.init.size(), 0);
        s.dot_seq[uo] = async_seq;
      }
    }
  }
  if (transpose) {
    const size_t r = v.shape.size();
    const int64_t rows = v.shape[r - 2], cols = v.shape[r - 1],
                  batch = static_cast<int64_t>(v.codes.size()) / std::max<int64_t>(rows * cols, 1);
    std::vector<uint64_t> t(v.codes.size());
    for (int64_t p = 0; p < batch; ++p)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          t[static_cast<size_t>(p * rows * cols + j * rows + i)] =
              v.codes[static_cast<size_t>(p * rows * cols + i * cols + j)];
    v.codes = std::move(t);
    std::swap(v.shape[r - 2], v.shape[r - 1]);
  }
  return v;
}

RegPtr Machine::dot_product(const ir::InstNode& n, const ir::TensorArg& a_arg, const ir::TensorArg& b_arg,
                            const RegTensor& c, bool transpose_a, bool transpose_b, int64_t async_seq) {
  const DotValues a = dot_operand(a_arg, transpose_a, async_seq);
  const DotValues b = dot_operand(b_arg, transpose_b, async_seq);
  const Index &as = a.shape, &bs = b.shape, &cs = c.table->shape;
  if (as.size() < 2 || bs.size() < 2 || cs.size() < 2)
    raise(n.loc, "{} needs operands of rank 2 or more", n.name());
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  auto batch = [](const Index& s) {
    int64_t p = 1;
    for (size_t d = 0; d + 2 < s.size(); ++d) p *= s[d];
    return p;
  };
  const int64_t B = batch(cs), Ba = batch(as), Bb = batch(bs);
  if (bs[bs.size() - 2] != K || cs[cs.size() - 2] != M || cs.back() != N || (Ba != 1 && Ba != B) ||
      (Bb != 1 && Bb != B)) {
    raise(n.loc, "{} of shapes {} @ {} + {} does not match", n.name(), format_index(as), format_index(bs),
          format_index(cs));
  }
  RegPtr out = new_reg(c.dtype, c.table->layout);
  charge_steps(checked_product(Index{B, M, N, K}).value_or(INT64_MAX));
  const bool integer = !a.dtype.is_float() && !b.dtype.is_float() && !c.dtype.is_float();
  auto values = [](const DotValues& x, auto zero) {
    using T = decltype(zero);
    std::vector<T> out(x.codes.size());
    for (size_t l = 0; l < x.codes.size(); ++l) {
      if constexpr (std::is_same_v<T, double>) {
        out[l] = decode(x.dtype, x.codes[l]);
      } else {
        out[l] = code_to_int(x.dtype, x.codes[l]);
      }
    }
    return out;
  };
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T> av = values(a, zero), bv = values(b, zero);
    std::vector<T> acc = logical_values<T>(c);
    std::vector<T> bt(static_cast<size_t>(K * N));  // one batch of b, transposed
    for (int64_t p = 0; p < B; ++p) {
      const T* ap = av.data() + (Ba == 1 ? 0 : p * M * K);
      const T* bp = bv.data() + (Bb == 1 ? 0 : p * K * N);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j) bt[static_cast<size_t>(j * K + k)] = bp[k * N + j];
      T* cp = acc.data() + p * M * N;
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
          T s = cp[i * N + j];
          const T* ar = ap + i * K;
          const T* bc = bt.data() + j * K;
          if constexpr (std::is_same_v<T, int64_t>) {
            uint64_t u = static_cast<uint64_t>(s);
            for (int64_t k = 0; k < K; ++k) u += static_cast<uint64_t>(ar[k]) * static_cast<uint64_t>(bc[k]);
            s = static_cast<int64_t>(u);
          } else {
            for (int64_t k = 0; k < K; ++k) s += ar[k] * bc[k];
          }
          cp[i * N + j] = s;
        }
      }
    }
    return acc;
  };
  const DataType dt = c.dtype;
  if (integer) {
    scatter(*out, run(int64_t{0}), [&](int64_t v) { return wrap_int_result(dt, v); });
  } else {
    scatter(*out, run(0.0), [&](double v) { return round_float_result(dt, v); });
  }
  return out;
}

RegPtr Machine::dot(const ir::DotInst& n) {
  RegTensor& c = reg_operand(n.c);
  check_init(c, n.c);
  return dot_product(n, n.a, n.b, c, n.transpose_a, n.transpose_b, 0);
}

}  // namespace tilevm::interp::detail
