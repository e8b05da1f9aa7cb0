// Degree bookkeeping for the verifier's bound (internal to the superopt layer; docs/superopt.md derives the
// bound). Evaluating a graph in this algebra gives, for every element, upper bounds on the shape of the
// formal expression it computes, written N / D:
//
//   N    an exponential polynomial  sum_i f_i(x) * exp(h_i(x)), terms with equal exponents merged:
//        deg >= every deg f_i, terms >= the number of distinct exponentials (a polynomial without exp is
//        one term, exp(0)), and every exponent h_i = u_i / v_i has deg u_i <= exp_num, deg v_i <= exp_den
//   D    a product of atoms, each the numerator of a divisor. An atom is keyed by the divisor value's
//        identity, so one divisor broadcast over a row (softmax's sum, rms_norm's scale) is one atom however
//        many terms share it, and sums of fractions over it do not multiply denominators
//
// Inputs are variables (degree 1). The result of sqrt, silu, gelu or relu is a fresh variable; its argument
// is recorded, since two formally different arguments that collide in the field would make the random
// functions agree where they should not.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tilevm/superopt/constant.h"
#include "tilevm/superopt/op_kind.h"

namespace tilevm::superopt {

// Counts are doubles: they only bound, and overflow to infinity instead of wrapping.
struct PolyBound {
  double deg = 0;
  double terms = 1;
  double exp_num = 0;
  double exp_den = 0;
  bool has_exp = false;  // some exponent may be nonzero; without, all terms are one (exp(0))
};

inline PolyBound poly_mul(const PolyBound& a, const PolyBound& b) {
  PolyBound r;
  r.deg = a.deg + b.deg;
  r.terms = a.terms * b.terms;
  r.has_exp = a.has_exp || b.has_exp;
  // The exponent of a product of two terms is h_a + h_b = (u_a v_b + u_b v_a) / (v_a v_b).
  if (a.exp_den == 0 && b.exp_den == 0) {
    r.exp_num = std::max(a.exp_num, b.exp_num);
  } else {
    r.exp_num = std::max(a.exp_num + b.exp_den, b.exp_num + a.exp_den);
    r.exp_den = a.exp_den + b.exp_den;
  }
  return r;
}

inline PolyBound poly_add(const PolyBound& a, const PolyBound& b) {
  // Without exponentials both sides are one term, exp(0), and so is their sum.
  double terms = a.has_exp || b.has_exp ? a.terms + b.terms : 1;
  return {std::max(a.deg, b.deg), terms, std::max(a.exp_num, b.exp_num), std::max(a.exp_den, b.exp_den),
          a.has_exp || b.has_exp};
}

inline PolyBound poly_max(const PolyBound& a, const PolyBound& b) {
  return {std::max(a.deg, b.deg), std::max(a.terms, b.terms), std::max(a.exp_num, b.exp_num),
          std::max(a.exp_den, b.exp_den), a.has_exp || b.has_exp};
}

struct DegreeValue {
  PolyBound num;
  std::vector<std::pair<uint64_t, int>> den;  // atom id -> multiplicity, sorted by id
  uint64_t id = 0;                            // identity of this value, the atom key when it divides
};

class DegreeAlgebra {
 public:
  using Value = DegreeValue;

  Value input() { return fresh({1, 1, 0, 0}); }
  Value add(const Value& a, const Value& b) {
    if (a.den.empty() && b.den.empty()) return make(poly_add(a.num, b.num), {});
    std::vector<std::pair<uint64_t, int>> lcd = merge(a.den, b.den, /*sum=*/false);
    PolyBound n = poly_add(poly_mul(a.num, product(missing(lcd, a.den))),
                           poly_mul(b.num, product(missing(lcd, b.den))));
    return make(n, limit(std::move(lcd)));
  }
  Value mul(const Value& a, const Value& b) {
    return make(poly_mul(a.num, b.num), limit(merge(a.den, b.den, true)));
  }
  // out[m x n] = a[m x k] @ b[k x n], the same bounds as the evaluator's mul/add loop gives. Where b has no
  // denominators and a row of a has one denominator throughout (inputs and their products; rms_norm's
  // output, a row over its scale), the sums are folded over the bounds alone, row by row, without a value
  // (and a denominator vector) per product: the loop's add then finds the common denominator already there
  // and multiplies both sides by an empty product, which the fold repeats.
  void matmul(const Value* a, const Value* b, Value* out, int64_t m, int64_t k, int64_t n) {
    const bool b_plain = std::all_of(b, b + k * n, [](const Value& v) { return v.den.empty(); });
    const PolyBound one;
    std::vector<PolyBound> acc(static_cast<size_t>(n));
    for (int64_t i = 0; i < m; ++i) {
      const Value* row = a + i * k;
      const Den& d = row[0].den;
      const bool fast =
          b_plain && d.size() <= 256 && std::all_of(row, row + k, [&](const Value& v) { return v.den == d; });
      if (!fast) {
        for (int64_t j = 0; j < n; ++j) {
          Value sum = mul(row[0], b[j]);
          for (int64_t l = 1; l < k; ++l) sum = add(sum, mul(row[l], b[l * n + j]));
          out[i * n + j] = std::move(sum);
        }
        continue;
      }
      for (int64_t l = 0; l < k; ++l)
        for (int64_t j = 0; j < n; ++j) {
          const PolyBound p = poly_mul(row[l].num, b[l * n + j].num);
          PolyBound& s = acc[static_cast<size_t>(j)];
          s = l == 0 ? p : d.empty() ? poly_add(s, p) : poly_add(poly_mul(s, one), poly_mul(p, one));
        }
      for (int64_t j = 0; j < n; ++j) out[i * n + j] = make(acc[static_cast<size_t>(j)], d);
    }
  }

  Value div(const Value& a, const Value& b) {
    atoms_.emplace(b.id, b.num);
    std::vector<std::pair<uint64_t, int>> den = merge(a.den, {{b.id, 1}}, true);
    return make(poly_mul(a.num, product(b.den)), limit(std::move(den)));
  }
  Value exp(const Value& a) {
    PolyBound n{0, 1, a.num.deg, product(a.den).deg, true};
    return make(n, {});
  }
  Value apply(OpKind, const Value& a) {
    ++applications_;
    argument_num_ = poly_max(argument_num_, a.num);
    argument_den_ = poly_max(argument_den_, product(a.den));
    return fresh({1, 1, 0, 0});
  }
  Value constant(const Constant&) { return make({0, 1, 0, 0}, {}); }

  // The numerator of a - b over their least common denominator.
  PolyBound difference(const Value& a, const Value& b) {
    std::vector<std::pair<uint64_t, int>> lcd = merge(a.den, b.den, false);
    return poly_add(poly_mul(a.num, product(missing(lcd, a.den))),
                    poly_mul(b.num, product(missing(lcd, b.den))));
  }
  double applications() const { return applications_; }
  // A bound on the numerator of the difference of any two recorded arguments of random functions.
  PolyBound argument_difference() const {
    PolyBound cross = poly_mul(argument_num_, argument_den_);
    return poly_add(cross, cross);
  }

 private:
  using Den = std::vector<std::pair<uint64_t, int>>;

  Value fresh(PolyBound num) { return make(num, {}); }
  Value make(PolyBound num, Den den) { return {num, std::move(den), next_id_++}; }

  // Multiset sum (product of denominators) or maximum (their least common multiple).
  static Den merge(const Den& a, const Den& b, bool sum) {
    Den out;
    size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
      if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
        out.push_back(a[i++]);
      } else if (i == a.size() || b[j].first < a[i].first) {
        out.push_back(b[j++]);
      } else {
        out.push_back({a[i].first, sum ? a[i].second + b[j].second : std::max(a[i].second, b[j].second)});
        ++i, ++j;
      }
    }
    return out;
  }
  // lcd / part, both multisets with part <= lcd.
  static Den missing(const Den& lcd, const Den& part) {
    Den out;
    size_t j = 0;
    for (const auto& [id, count] : lcd) {
      while (j < part.size() && part[j].first < id) ++j;
      int have = j < part.size() && part[j].first == id ? part[j].second : 0;
      if (count > have) out.push_back({id, count - have});
    }
    return out;
  }
  PolyBound product(const Den& den) const {
    PolyBound r;
    for (const auto& [id, count] : den)
      for (int k = 0; k < count; ++k) r = poly_mul(r, atoms_.at(id));
    return r;
  }
  // A denominator of many atoms becomes one opaque atom of the same degree: still a bound, and it keeps the
  // bookkeeping linear in the graph's size.
  Den limit(Den den) {
    if (den.size() <= 256) return den;
    uint64_t id = next_id_++;
    atoms_.emplace(id, product(den));
    return {{id, 1}};
  }

  std::unordered_map<uint64_t, PolyBound> atoms_;
  uint64_t next_id_ = 1;
  double applications_ = 0;
  PolyBound argument_num_{0, 1, 0, 0};
  PolyBound argument_den_{0, 1, 0, 0};
};

}  // namespace tilevm::superopt
