// evaluate_real: the graph evaluator (evaluator.h) over doubles.
#include "tilevm/superopt/evaluate.h"

#include <cmath>

#include "evaluator.h"

namespace tilevm::superopt {

namespace {

struct RealAlgebra {
  using Value = double;
  double add(double a, double b) { return a + b; }
  double mul(double a, double b) { return a * b; }
  double div(double a, double b) { return a / b; }
  double exp(double a) { return std::exp(a); }
  double constant(const Constant& c) { return c.to_double(); }
  void merge_block_copy(const RealAlgebra&) {}  // no state: a block op's blocks may run on several threads
  // out = a @ b summing over k in the same order as the evaluator's loop, reading b row by row (the compiler
  // may fuse a multiply-add here; the double reference is far finer than the f16 kernels it checks).
  void matmul(const double* a, const double* b, double* out, int64_t m, int64_t k, int64_t n) const {
    for (int64_t i = 0; i < m; ++i) {
      double* row = out + i * n;
      for (int64_t j = 0; j < n; ++j) row[j] = a[i * k] * b[j];
      for (int64_t l = 1; l < k; ++l) {
        const double x = a[i * k + l];
        for (int64_t j = 0; j < n; ++j) row[j] += x * b[l * n + j];
      }
    }
  }
  double apply(OpKind fn, double x) {
    switch (fn) {
      case OpKind::Sqrt:
        return std::sqrt(x);
      case OpKind::Silu:
        return x / (1.0 + std::exp(-x));
      case OpKind::Gelu:
        return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
      case OpKind::Relu:
        return x > 0 ? x : 0.0;
      default:
        break;
    }
    TILEVM_ASSERT(false, "{} is not an uninterpreted function", op_name(fn));
    return 0;
  }
};

}  // namespace

std::vector<std::vector<double>> evaluate_real(const Graph& graph,
                                               const std::vector<std::vector<double>>& inputs) {
  std::vector<int> ids = graph.inputs();
  if (ids.size() != inputs.size())
    fail("the graph has {} inputs but {} were given", ids.size(), inputs.size());
  std::vector<Array<double>> arrays;
  for (size_t i = 0; i < ids.size(); ++i) {
    const TensorDecl& t = graph.tensor(ids[i]);
    if (static_cast<int64_t>(inputs[i].size()) != element_count(t.shape))
      fail("input '{}' {} has {} elements but {} were given", t.name, shape_text(t.shape),
           element_count(t.shape), inputs[i].size());
    arrays.push_back({t.shape, inputs[i]});
  }
  std::vector<const Array<double>*> pointers;
  for (const Array<double>& a : arrays) pointers.push_back(&a);
  RealAlgebra alg;
  Evaluator<RealAlgebra> evaluator(alg);
  std::vector<std::vector<double>> outs;
  for (Array<double>& a : evaluator.run(graph, pointers)) outs.push_back(std::move(a.data));
  return outs;
}

}  // namespace tilevm::superopt
