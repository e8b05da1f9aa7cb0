// Evaluation of superoptimizer graphs over any element algebra (internal to the superopt layer). One
// interpreter of the graph semantics serves three algebras: real numbers (evaluate.cpp, the numeric
// reference), the finite fields of the verifier (field_algebra.h) and the degree bookkeeping that gives the
// verifier's bound (degree_algebra.h). An algebra supplies
//
//   using Value = ...;                          default-constructible
//   Value add(const Value&, const Value&);      also mul, div
//   Value exp(const Value&);
//   Value apply(OpKind fn, const Value&);       sqrt, silu, gelu, relu
//   Value constant(const Constant&);
//   void merge_block_copy(const Alg& copy);     optional: where given, a block op's blocks may run on several
//                                               threads, each with a copy of the algebra (its caches are its
//                                               own), merged back after (e.g. a division by zero it saw)
//
// Semantics (graph.h): element-wise ops broadcast extents of 1; square is mul(x, x); sum folds left to
// right; rms_norm(x) = x / sqrt(sum(x * x) * (1/n) + eps) over the last dimension, exactly the unfused
// chain, so that a fused and an unfused rms_norm are the same expression. A block op runs its block graph
// once per block (x fastest), each block its loop, and accumulates and saves as the block graph says.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

#include "tilevm/superopt/graph.h"
#include "tilevm/support/error.h"

namespace tilevm::superopt {

template <typename V>
struct Array {
  Shape shape;
  std::vector<V> data;
};

namespace detail {

inline std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

// Calls fn(flat index in `shape`, multi-index) for every element, row-major.
template <typename Fn>
void for_each_index(const Shape& shape, Fn&& fn) {
  std::vector<int64_t> index(shape.size(), 0);
  int64_t n = element_count(shape);
  for (int64_t flat = 0; flat < n; ++flat) {
    fn(flat, index);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

// Extent-product of dimensions [0, dim), the extent of dim, and the product of (dim, rank).
inline std::array<int64_t, 3> split_at(const Shape& shape, int dim) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < dim; ++i) outer *= shape[i];
  for (size_t i = dim + 1; i < shape.size(); ++i) inner *= shape[i];
  return {outer, shape[dim], inner};
}

}  // namespace detail

template <typename Alg>
class Evaluator {
 public:
  using V = typename Alg::Value;
  explicit Evaluator(Alg& alg) : alg_(alg) {}

  // Kernel and thread graphs: `inputs` bound to the Input ops in order. Returns the graph's outputs.
  std::vector<Array<V>> run(const Graph& g, const std::vector<const Array<V>*>& inputs) {
    std::vector<Array<V>> env(g.tensors().size());
    size_t next_input = 0;
    for (const Op& op : g.ops()) {
      if (op.kind == OpKind::Input) {
        TILEVM_ASSERT(next_input < inputs.size(), "too few inputs for the graph");
        const Array<V>& in = *inputs[next_input++];
        TILEVM_ASSERT(in.shape == g.tensor(op.outputs[0]).shape, "input shape {} != {}", shape_text(in.shape),
                      shape_text(g.tensor(op.outputs[0]).shape));
        env[op.outputs[0]] = in;
      } else {
        eval_op(g, op, env);
      }
    }
    std::vector<Array<V>> outs;
    for (int id : g.outputs()) outs.push_back(env[id]);
    return outs;
  }

 private:
  void eval_op(const Graph& g, const Op& op, std::vector<Array<V>>& env) {
    auto in = [&](int i) -> const Array<V>& { return env[op.inputs[i]]; };
    Array<V>& out = env[op.outputs[0]];
    switch (op.kind) {
      case OpKind::Const:
        out = {g.tensor(op.outputs[0]).shape, {}};
        out.data.assign(element_count(out.shape), alg_.constant(op.value));
        return;
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Div:
        out = binary(op.kind, in(0), in(1));
        return;
      case OpKind::Square:
        out = binary(OpKind::Mul, in(0), in(0));
        return;
      case OpKind::Exp:
      case OpKind::Sqrt:
      case OpKind::Silu:
      case OpKind::Gelu:
      case OpKind::Relu:
        out.shape = in(0).shape;
        out.data.clear();
        for (const V& v : in(0).data)
          out.data.push_back(op.kind == OpKind::Exp ? alg_.exp(v) : alg_.apply(op.kind, v));
        return;
      case OpKind::Matmul:
        out = matmul(in(0), in(1));
        return;
      case OpKind::Sum:
        out = sum(in(0), op.dim);
        return;
      case OpKind::Concat:
        out = concat(in(0), in(1), op.dim);
        return;
      case OpKind::RmsNorm:
        out = rms_norm(in(0), op.value);
        return;
      case OpKind::Thread: {
        std::vector<const Array<V>*> operands;
        for (int id : op.inputs) operands.push_back(&env[id]);
        std::vector<Array<V>> results = run(g.children()[op.child], operands);
        for (size_t i = 0; i < results.size(); ++i) env[op.outputs[i]] = std::move(results[i]);
        return;
      }
      case OpKind::Block: {
        std::vector<const Array<V>*> operands;
        for (int id : op.inputs) operands.push_back(&env[id]);
        std::vector<Array<V>> results = run_block(g.children()[op.child], operands);
        for (size_t i = 0; i < results.size(); ++i) env[op.outputs[i]] = std::move(results[i]);
        return;
      }
      case OpKind::Input:
      case OpKind::Iter:
      case OpKind::Accum:
      case OpKind::Save:
        break;
    }
    TILEVM_ASSERT(false, "{} is evaluated by its graph's loop", op_name(op.kind));
  }

  Array<V> binary(OpKind kind, const Array<V>& a, const Array<V>& b) {
    Array<V> out{broadcast_shape(a.shape, b.shape, op_name(kind)), {}};
    out.data.reserve(element_count(out.shape));
    std::vector<int64_t> sa = detail::strides_of(a.shape), sb = detail::strides_of(b.shape);
    for (size_t d = 0; d < out.shape.size(); ++d) {
      if (a.shape[d] == 1) sa[d] = 0;
      if (b.shape[d] == 1) sb[d] = 0;
    }
    detail::for_each_index(out.shape, [&](int64_t, const std::vector<int64_t>& index) {
      int64_t ia = 0, ib = 0;
      for (size_t d = 0; d < index.size(); ++d) ia += index[d] * sa[d], ib += index[d] * sb[d];
      const V& x = a.data[ia];
      const V& y = b.data[ib];
      out.data.push_back(kind == OpKind::Add   ? alg_.add(x, y)
                         : kind == OpKind::Mul ? alg_.mul(x, y)
                                               : alg_.div(x, y));
    });
    return out;
  }

  Array<V> matmul(const Array<V>& a, const Array<V>& b) {
    size_t r = a.shape.size();
    int64_t m = a.shape[r - 2], k = a.shape[r - 1], n = b.shape[r - 1];
    int64_t batch = element_count(a.shape) / (m * k);
    Array<V> out{a.shape, {}};
    out.shape[r - 1] = n;
    if constexpr (requires { alg_.matmul(a.data.data(), b.data.data(), out.data.data(), m, k, n); }) {
      out.data.resize(static_cast<size_t>(batch * m * n));
      for (int64_t bi = 0; bi < batch; ++bi)
        alg_.matmul(&a.data[static_cast<size_t>(bi * m * k)], &b.data[static_cast<size_t>(bi * k * n)],
                    &out.data[static_cast<size_t>(bi * m * n)], m, k, n);
      return out;
    }
    out.data.reserve(batch * m * n);
    for (int64_t bi = 0; bi < batch; ++bi)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const V* pa = &a.data[(bi * m + i) * k];
          const V* pb = &b.data[bi * k * n + j];
          V acc = alg_.mul(pa[0], pb[0]);
          for (int64_t l = 1; l < k; ++l) acc = alg_.add(acc, alg_.mul(pa[l], pb[l * n]));
          out.data.push_back(std::move(acc));
        }
    return out;
  }

  Array<V> sum(const Array<V>& x, int dim) {
    auto [outer, len, inner] = detail::split_at(x.shape, dim);
    Array<V> out{x.shape, {}};
    out.shape[dim] = 1;
    out.data.reserve(outer * inner);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        V acc = x.data[o * len * inner + j];
        for (int64_t l = 1; l < len; ++l) acc = alg_.add(acc, x.data[(o * len + l) * inner + j]);
        out.data.push_back(std::move(acc));
      }
    return out;
  }

  Array<V> concat(const Array<V>& a, const Array<V>& b, int dim) {
    auto [outer, la, inner] = detail::split_at(a.shape, dim);
    int64_t lb = b.shape[dim];
    Array<V> out{a.shape, {}};
    out.shape[dim] = la + lb;
    out.data.reserve(element_count(out.shape));
    for (int64_t o = 0; o < outer; ++o) {
      out.data.insert(out.data.end(), a.data.begin() + o * la * inner, a.data.begin() + (o + 1) * la * inner);
      out.data.insert(out.data.end(), b.data.begin() + o * lb * inner, b.data.begin() + (o + 1) * lb * inner);
    }
    return out;
  }

  Array<V> rms_norm(const Array<V>& x, const Constant& eps) {
    int64_t n = x.shape.back();
    int64_t rows = element_count(x.shape) / n;
    V inv_n = alg_.constant(make_constant(1, n));
    V eps_value = alg_.constant(eps);
    Array<V> out{x.shape, {}};
    out.data.reserve(x.data.size());
    for (int64_t r = 0; r < rows; ++r) {
      const V* row = &x.data[r * n];
      V acc = alg_.mul(row[0], row[0]);
      for (int64_t j = 1; j < n; ++j) acc = alg_.add(acc, alg_.mul(row[j], row[j]));
      V scale = alg_.apply(OpKind::Sqrt, alg_.add(alg_.mul(acc, inv_n), eps_value));
      for (int64_t j = 0; j < n; ++j) out.data.push_back(alg_.div(row[j], scale));
    }
    return out;
  }

  // The part of `src` of extents `sizes` at `offsets`.
  static Array<V> slice(const Array<V>& src, const std::vector<int64_t>& offsets, const Shape& sizes) {
    Array<V> out{sizes, {}};
    out.data.reserve(element_count(sizes));
    std::vector<int64_t> strides = detail::strides_of(src.shape);
    detail::for_each_index(sizes, [&](int64_t, const std::vector<int64_t>& index) {
      int64_t flat = 0;
      for (size_t d = 0; d < index.size(); ++d) flat += (index[d] + offsets[d]) * strides[d];
      out.data.push_back(src.data[flat]);
    });
    return out;
  }

  static void place(Array<V>& dst, const Array<V>& src, const std::vector<int64_t>& offsets) {
    std::vector<int64_t> strides = detail::strides_of(dst.shape);
    detail::for_each_index(src.shape, [&](int64_t i, const std::vector<int64_t>& index) {
      int64_t flat = 0;
      for (size_t d = 0; d < index.size(); ++d) flat += (index[d] + offsets[d]) * strides[d];
      dst.data[flat] = src.data[i];
    });
  }

  std::vector<Array<V>> run_block(const Graph& g, const std::vector<const Array<V>*>& operands) {
    const std::array<int64_t, 3>& grid = g.grid();
    std::vector<Array<V>> results;
    for (int id : g.outputs()) {
      results.push_back({g.tensor(id).shape, {}});
      results.back().data.resize(element_count(g.tensor(id).shape));
    }
    const int64_t blocks = grid[0] * grid[1] * grid[2];
    auto block_of = [&](int64_t b) {  // x fastest
      return std::array<int64_t, 3>{b % grid[0], b / grid[0] % grid[1], b / (grid[0] * grid[1])};
    };
    // The blocks run on several threads where the algebra allows it and they write disjoint parts of the
    // outputs (every grid dimension of more than one block saved along an output dimension): the same bits as
    // in order. A [16, 4096] x [4096, 4096] product as 128 blocks of 32 steps took 2 x the time of the one
    // product (whose matmul splits over the cores) before; the verifier evaluates such a candidate in every
    // trial.
    int threads = 1;
    if constexpr (requires(Alg & a, const Alg& b) { a.merge_block_copy(b); }) {
      // Small block ops (the search's own graphs) are not worth threads.
      int64_t elements = 0;
      for (const Array<V>* operand : operands) elements += static_cast<int64_t>(operand->data.size());
      bool disjoint = true;
      for (const Op& op : g.ops())
        if (op.kind == OpKind::Save)
          for (int d = 0; d < 3; ++d) {
            disjoint = disjoint && (grid[d] == 1 || op.map[d] != kReplica);
            for (int e = 0; e < d; ++e)  // two grid dimensions along one output dimension overlap
              disjoint = disjoint && (grid[d] == 1 || grid[e] == 1 || op.map[d] != op.map[e]);
          }
      if (disjoint && elements >= (int64_t{1} << 16))
        threads =
            static_cast<int>(std::min<int64_t>(blocks, std::max(1u, std::thread::hardware_concurrency())));
      if (threads > 1) {
        std::atomic<int64_t> next{0};
        std::vector<Alg> algebras(static_cast<size_t>(threads), alg_);
        std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
        auto work = [&](int t) {
          try {
            Evaluator mine(algebras[static_cast<size_t>(t)]);
            for (int64_t b = next++; b < blocks; b = next++)
              mine.run_one_block(g, operands, block_of(b), results);
          } catch (...) {
            errors[static_cast<size_t>(t)] = std::current_exception();
          }
        };
        std::vector<std::thread> pool;
        pool.reserve(static_cast<size_t>(threads - 1));
        try {
          for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
        } catch (...) {  // fewer threads to be had: those started and this one
        }
        work(0);
        for (std::thread& t : pool) t.join();
        for (const std::exception_ptr& e : errors)
          if (e) std::rethrow_exception(e);
        for (const Alg& a : algebras) alg_.merge_block_copy(a);
        return results;
      }
    }
    for (int64_t b = 0; b < blocks; ++b) run_one_block(g, operands, block_of(b), results);
    return results;
  }

  // One block of a block graph: its invariant ops, its loop, then its accumulators and saves into `results`.
  void run_one_block(const Graph& g, const std::vector<const Array<V>*>& operands,
                     const std::array<int64_t, 3>& block, std::vector<Array<V>>& results) {
    auto phase = [&](const Op& op) { return g.tensor(op.outputs[0]).phase; };
    std::vector<Array<V>> env(g.tensors().size());
    for (const Op& op : g.ops())
      if (phase(op) == Phase::Invariant) eval_op(g, op, env);
    std::vector<Array<V>> acc(g.tensors().size());
    for (int64_t i = 0; i < g.loop(); ++i) {
      for (const Op& op : g.ops()) {
        if (op.kind == OpKind::Iter) {
          env[op.outputs[0]] = iterate(g, op, *operands[op.operand], block, i);
        } else if (op.kind == OpKind::Accum) {
          accumulate(g, op, env[op.inputs[0]], acc[op.outputs[0]], i);
        } else if (phase(op) == Phase::Loop) {
          eval_op(g, op, env);
        }
      }
    }
    size_t save_index = 0;
    for (const Op& op : g.ops()) {
      if (op.kind == OpKind::Accum) {
        env[op.outputs[0]] = std::move(acc[op.outputs[0]]);
      } else if (op.kind == OpKind::Save) {
        const Array<V>& part = env[op.inputs[0]];
        std::vector<int64_t> offsets(part.shape.size(), 0);
        for (int d = 0; d < 3; ++d)
          if (op.map[d] != kReplica) offsets[op.map[d]] = block[d] * part.shape[op.map[d]];
        place(results[save_index++], part, offsets);
      } else if (phase(op) == Phase::Post) {
        eval_op(g, op, env);
      }
    }
  }

  Array<V> iterate(const Graph& g, const Op& op, const Array<V>& operand, const std::array<int64_t, 3>& block,
                   int64_t i) {
    const Shape& sizes = g.tensor(op.outputs[0]).shape;
    std::vector<int64_t> offsets(sizes.size(), 0);
    // The block's chunk along an imap'd dimension is loop * sizes[d] when fmap also splits d (block-major).
    for (int d = 0; d < 3; ++d)
      if (op.map[d] != kReplica) {
        int64_t chunk = sizes[op.map[d]] * (op.fmap == op.map[d] ? g.loop() : 1);
        offsets[op.map[d]] += block[d] * chunk;
      }
    if (op.fmap != kReplica) offsets[op.fmap] += i * sizes[op.fmap];
    return slice(operand, offsets, sizes);
  }

  void accumulate(const Graph& g, const Op& op, const Array<V>& value, Array<V>& acc, int64_t i) {
    if (op.fmap == kReplica) {
      if (i == 0) {
        acc = value;
      } else {
        for (size_t k = 0; k < acc.data.size(); ++k) acc.data[k] = alg_.add(acc.data[k], value.data[k]);
      }
      return;
    }
    if (i == 0) {
      acc.shape = g.tensor(op.outputs[0]).shape;
      acc.data.assign(element_count(acc.shape), V{});
    }
    std::vector<int64_t> offsets(value.shape.size(), 0);
    offsets[op.fmap] = i * value.shape[op.fmap];
    place(acc, value, offsets);
  }

  Alg& alg_;
};

}  // namespace tilevm::superopt
