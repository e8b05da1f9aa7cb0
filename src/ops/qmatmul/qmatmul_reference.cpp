// The quantized matmul's double reference and its comparison (qmatmul_reference.h explains the tolerance).
#include "tilevm/ops/qmatmul/qmatmul_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"

namespace tilevm::ops {

namespace {

double unit_roundoff(DataType t) {
  return std::ldexp(1.0, -(t.mantissa_bits() + 1));
}

}  // namespace

QMatmulReference qmatmul_reference(const QMatmulProblem& p, std::span<const uint16_t> a,
                                   const QuantizedWeight& w) {
  check_problem(p);
  if (static_cast<int64_t>(a.size()) != p.m * p.k)
    fail("qmatmul reference: A has {} elements, the problem {} needs m*k = {}", a.size(), p.key(), p.m * p.k);
  if (w.k != p.k || w.n != p.n)
    fail("qmatmul reference: the weight is [{}, {}], the problem {} needs [{}, {}]", w.k, w.n, p.key(), p.k,
         p.n);
  if (w.spec.wtype != p.wtype || w.spec.group != p.group || w.spec.scale_type != p.atype ||
      w.spec.zero_point != p.zero_point) {
    fail("qmatmul reference: the weight is {} with group {}, {} scales{}, the problem is {}",
         w.spec.wtype.name(), w.spec.group, w.spec.scale_type.name(),
         w.spec.zero_point ? " and zero points" : "", p.key());
  }
  const std::vector<double> weight = dequantize(w);  // [k, n]
  QMatmulReference ref;
  ref.m = p.m;
  ref.n = p.n;
  ref.c.assign(static_cast<size_t>(p.m * p.n), 0.0);
  ref.magnitude.assign(static_cast<size_t>(p.m * p.n), 0.0);
  // O(m n k) in double: rows are split over the cores (a prefill check, 4096 x 8192 x 8192, is minutes on
  // one core). Each output is still summed in k order by one thread, so the result does not depend on the
  // thread count.
  auto rows = [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      double* c = &ref.c[static_cast<size_t>(i * p.n)];
      double* s = &ref.magnitude[static_cast<size_t>(i * p.n)];
      for (int64_t kk = 0; kk < p.k; ++kk) {
        const double av = decode(p.atype, a[static_cast<size_t>(i * p.k + kk)]);
        const double* row = &weight[static_cast<size_t>(kk * p.n)];
        for (int64_t j = 0; j < p.n; ++j) {
          c[j] += av * row[j];
          s[j] += std::abs(av * row[j]);
        }
      }
    }
  };
  const int64_t work = p.m * p.n * p.k;
  const int64_t threads = work < (int64_t{1} << 24)
                              ? 1
                              : std::min<int64_t>(p.m, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t) pool.emplace_back(rows, p.m * t / threads, p.m * (t + 1) / threads);
  for (std::thread& t : pool) t.join();
  return ref;
}

double qmatmul_tolerance(const QMatmulProblem& p, double expected, double magnitude, bool weights_rounded) {
  const double u = unit_roundoff(p.atype);
  double tol = 2 * u * std::abs(expected) + p.atype.smallest_subnormal();
  if (weights_rounded || !qmatmul_weight_fits(p.wtype, p.atype)) tol += u * magnitude;
  tol += (static_cast<double>(p.k) / 8 + 16) * std::ldexp(magnitude, -24);
  return tol;
}

QMatmulCheck check_qmatmul(const QMatmulProblem& p, std::span<const uint16_t> c, const QMatmulReference& ref,
                           bool weights_rounded) {
  if (static_cast<int64_t>(c.size()) != ref.m * ref.n || ref.m != p.m || ref.n != p.n)
    fail("qmatmul check: C has {} elements, the reference is [{}, {}] and the problem {}", c.size(), ref.m,
         ref.n, p.key());
  QMatmulCheck check;
  check.outputs = p.m * p.n;
  double worst_ratio = -1;
  for (int64_t idx = 0; idx < check.outputs; ++idx) {
    const auto i = static_cast<size_t>(idx);
    const double got = decode(p.atype, c[i]);
    const double expected = decode(p.atype, encode(p.atype, ref.c[i]));
    const double tol = qmatmul_tolerance(p, ref.c[i], ref.magnitude[i], weights_rounded);
    double error = std::abs(got - expected);
    double ratio;
    if (std::isinf(expected) && got == expected) {
      error = 0;
      ratio = 0;
    } else if (!std::isfinite(got) || !std::isfinite(expected)) {
      error = std::numeric_limits<double>::infinity();
      ratio = std::numeric_limits<double>::infinity();
    } else {
      ratio = error / tol;
    }
    if (!(error <= tol)) ++check.mismatches;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      check.worst_row = idx / p.n;
      check.worst_col = idx % p.n;
      check.worst_value = got;
      check.worst_expected = expected;
      check.worst_error = error;
      check.worst_tolerance = tol;
    }
  }
  return check;
}

std::string QMatmulCheck::summary() const {
  const std::string worst =
      fmt::format("C[{}, {}] = {}, expected {} (error {:.3g}, tolerance {:.3g})", worst_row, worst_col,
                  format_value(worst_value), format_value(worst_expected), worst_error, worst_tolerance);
  if (passed()) return fmt::format("all {} outputs within tolerance; worst {}", outputs, worst);
  return fmt::format("{} of {} outputs mismatch; worst {}", mismatches, outputs, worst);
}

}  // namespace tilevm::ops
