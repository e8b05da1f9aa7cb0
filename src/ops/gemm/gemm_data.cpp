// The GEMM programs' random inputs and reference check (gemm_data.h).
#include "tilevm/ops/gemm/gemm_data.h"

#include <cmath>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "tilevm/type/convert.h"

namespace tilevm::ops {

namespace {

double f16_at(const std::vector<uint8_t>& v, size_t i) {
  uint16_t x;
  std::memcpy(&x, &v[2 * i], 2);
  return decode(DataType::f16(), x);
}

}  // namespace

interp::Arguments GemmData::args() {
  interp::Arguments args;
  args.scalars["M"] = interp::ScalarValue{false, m, 0.0};
  args.scalars["N"] = interp::ScalarValue{false, n, 0.0};
  args.scalars["K"] = interp::ScalarValue{false, k, 0.0};
  args.buffers["a_ptr"] = &a;
  args.buffers["b_ptr"] = &b;
  args.buffers["c_ptr"] = &c;
  return args;
}

GemmData random_gemm_data(int64_t m, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  auto random = [&](int64_t count) {
    std::vector<uint8_t> out(static_cast<size_t>(2 * count));
    for (size_t i = 0; i < out.size() / 2; ++i) {
      const auto code = static_cast<uint16_t>(encode(DataType::f16(), real(rng)));
      std::memcpy(&out[2 * i], &code, 2);
    }
    return out;
  };
  GemmData d{m, n, k, random(m * k), random(n * k), {}};
  d.c.assign(static_cast<size_t>(m * n * 2), 0xFF);  // NaN
  return d;
}

std::string gemm_mismatch(const GemmData& d, const std::vector<uint8_t>& c, double rel, double abs) {
  // The operands decoded once (a decode per multiply-add made a 2048^3 check take minutes).
  auto decoded = [](const std::vector<uint8_t>& codes) {
    std::vector<double> out(codes.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) out[i] = f16_at(codes, i);
    return out;
  };
  const std::vector<double> a = decoded(d.a), b = decoded(d.b);
  for (int64_t i = 0; i < d.m; ++i)
    for (int64_t j = 0; j < d.n; ++j) {
      // data() + offset, not &a[...]: with K = 0 the vectors are empty and indexing them is undefined.
      const double* row = a.data() + i * d.k;
      const double* col = b.data() + j * d.k;
      double ref = 0;
      for (int64_t x = 0; x < d.k; ++x) ref += row[x] * col[x];
      const double got = f16_at(c, static_cast<size_t>(i * d.n + j));
      if (!(std::abs(got - ref) <= std::abs(ref) * rel + abs))
        return fmt::format("C[{}, {}] = {}, the product is {} (M, N, K = {}, {}, {})", i, j, got, ref, d.m,
                           d.n, d.k);
    }
  return "";
}

}  // namespace tilevm::ops
