// The finite-field algebra of the equivalence verifier (paper section 5.2, internal to the superopt layer).
// Every value is a pair: its residue mod p, the field in which the graph is evaluated, and its residue mod
// q, used only when the value becomes an exponent. exp(v) = omega^(v mod q) mod p, where omega is a random
// q-th root of unity in Z_p (q divides p - 1): a group homomorphism from (Z_q, +) into Z_p^*, so that
// exp(a + b) = exp(a) * exp(b) holds exactly. A value that went through exp has no residue mod q; the Lax
// fragment (at most one exp on a path) means none is needed, and check_lax refuses graphs that would.
//
// sqrt, silu, gelu and relu are outside the fragment. Each is evaluated as a random function of its
// argument's residue mod p, keyed per trial: equal arguments give equal results (so a fused and an unfused
// rms_norm agree) and nothing else about them is assumed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "parallel_parts.h"
#include "tilevm/superopt/constant.h"
#include "tilevm/superopt/op_kind.h"
#include "tilevm/superopt/verify.h"

namespace tilevm::superopt {

namespace field {

// __extension__: -Wpedantic rejects __int128 otherwise; 61-bit products need 122 bits.
__extension__ typedef unsigned __int128 Wide;

inline uint64_t mul_mod(uint64_t a, uint64_t b, uint64_t m) {
  return static_cast<uint64_t>(static_cast<Wide>(a) * b % m);
}

inline uint64_t pow_mod(uint64_t base, uint64_t e, uint64_t m) {
  uint64_t r = 1 % m;
  for (base %= m; e > 0; e >>= 1) {
    if (e & 1) r = mul_mod(r, base, m);
    base = mul_mod(base, base, m);
  }
  return r;
}

// @pre a % m != 0, m prime.
inline uint64_t inv_mod(uint64_t a, uint64_t m) {
  return pow_mod(a, m - 2, m);
}

inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline uint64_t residue(int64_t v, uint64_t m) {
  int64_t r = v % static_cast<int64_t>(m);
  return static_cast<uint64_t>(r < 0 ? r + static_cast<int64_t>(m) : r);
}

}  // namespace field

struct FieldValue {
  uint64_t p = 0;
  uint64_t q = 0;
  bool q_ok = true;  // false after exp, or after a division by zero mod q
};

class FieldAlgebra {
 public:
  using Value = FieldValue;
  FieldAlgebra(uint64_t omega, uint64_t key) : omega_(omega), key_(key) {}

  Value add(const Value& a, const Value& b) {
    return {(a.p + b.p) % kFieldP, (a.q + b.q) % kFieldQ, a.q_ok && b.q_ok};
  }
  Value mul(const Value& a, const Value& b) {
    return {field::mul_mod(a.p, b.p, kFieldP), field::mul_mod(a.q, b.q, kFieldQ), a.q_ok && b.q_ok};
  }
  // out[m x n] = a[m x k] @ b[k x n], row-major: the same values as the evaluator's mul/add loop, with the
  // reductions mod p and q deferred. A product of two residues mod p is below 2^122, so 32 of them add up
  // without overflowing 128 bits; products mod q are below 2^62. b is read row by row (contiguously), and
  // a large product is split by columns over the machine's cores (exact arithmetic: the same result for any
  // split; only products of 2^22 multiply-adds or more are split).
  // A [16, 4096] x [4096, 4096] product takes about a second on one core where the loop over strided
  // columns with a 128-bit division per term took minutes.
  void matmul(const Value* a, const Value* b, Value* out, int64_t m, int64_t k, int64_t n) const {
    const int64_t work = m * k * n;
    const int64_t threads =
        std::clamp<int64_t>(std::min<int64_t>(work >> 22, std::thread::hardware_concurrency()), 1, n);
    for_each_part(n, threads, [=](int64_t j0, int64_t j1) { matmul_columns(a, b, out, m, k, n, j0, j1); });
  }

  // An inverse costs about 120 multiplications mod p; a divisor broadcast along a row (softmax's sum) is the
  // same for many elements in a row, so the last one's inverse is kept.
  Value div(const Value& a, const Value& b) {
    Value r;
    if (b.p == 0) {
      undefined_ = true;  // the trial says nothing; the verifier draws another
    } else {
      if (b.p != last_div_p_) last_div_p_ = b.p, last_inv_p_ = field::inv_mod(b.p, kFieldP);
      r.p = field::mul_mod(a.p, last_inv_p_, kFieldP);
    }
    r.q_ok = a.q_ok && b.q_ok && b.q != 0;
    if (r.q_ok) {
      if (b.q != last_div_q_) last_div_q_ = b.q, last_inv_q_ = field::inv_mod(b.q, kFieldQ);
      r.q = field::mul_mod(a.q, last_inv_q_, kFieldQ);
    }
    return r;
  }
  // omega^e for e < q < 2^31 as omega^(e mod 2^16) * omega^(2^16 * (e >> 16)): two tables of this trial's
  // omega (built at the first exp: 2^16 + 2^15 multiplications) and one multiplication per exp, where the
  // square-and-multiply power took 62 (an attention's 2M exps took seconds per trial).
  Value exp(const Value& a) {
    // check_lax ran first, so a missing residue mod q here comes from a division by zero mod q.
    if (!a.q_ok) undefined_ = true;
    if (exp_low_.empty()) {
      static_assert(kFieldQ < (1ULL << 31));
      exp_low_.resize(1 << 16);
      exp_high_.resize(1 << 15);
      exp_low_[0] = exp_high_[0] = 1;
      for (size_t e = 1; e < exp_low_.size(); ++e)
        exp_low_[e] = field::mul_mod(exp_low_[e - 1], omega_, kFieldP);
      const uint64_t step = field::mul_mod(exp_low_.back(), omega_, kFieldP);  // omega^(2^16)
      for (size_t e = 1; e < exp_high_.size(); ++e)
        exp_high_[e] = field::mul_mod(exp_high_[e - 1], step, kFieldP);
    }
    return {field::mul_mod(exp_low_[a.q & 0xffff], exp_high_[a.q >> 16], kFieldP), 0, false};
  }
  Value apply(OpKind fn, const Value& a) {
    uint64_t h = field::mix(key_ ^ field::mix(static_cast<uint64_t>(fn) + 1) ^ field::mix(a.p));
    return {h % kFieldP, field::mix(h) % kFieldQ, true};
  }
  Value constant(const Constant& c) {
    uint64_t den_p = field::residue(c.den, kFieldP), den_q = field::residue(c.den, kFieldQ);
    Value v;
    if (den_p == 0) undefined_ = true;
    v.p = field::mul_mod(field::residue(c.num, kFieldP), field::inv_mod(den_p, kFieldP), kFieldP);
    v.q_ok = den_q != 0;
    if (v.q_ok) v.q = field::mul_mod(field::residue(c.num, kFieldQ), field::inv_mod(den_q, kFieldQ), kFieldQ);
    return v;
  }

  bool undefined() const { return undefined_; }
  // A copy that evaluated some of a block op's blocks (evaluator.h).
  void merge_block_copy(const FieldAlgebra& copy) { undefined_ = undefined_ || copy.undefined_; }

 private:
  // Columns [j0, j1) of the product.
  static void matmul_columns(const Value* a, const Value* b, Value* out, int64_t m, int64_t k, int64_t n,
                             int64_t j0, int64_t j1) {
    constexpr int64_t kLazy = 32;
    const size_t w = static_cast<size_t>(j1 - j0);
    std::vector<field::Wide> sp(w), sq(w);
    std::vector<char> ok(w);
    for (int64_t i = 0; i < m; ++i) {
      std::fill(sp.begin(), sp.end(), 0);
      std::fill(sq.begin(), sq.end(), 0);
      std::fill(ok.begin(), ok.end(), 1);
      for (int64_t l = 0; l < k; ++l) {
        const Value& x = a[i * k + l];
        const Value* row = b + l * n + j0;
        for (size_t j = 0; j < w; ++j) {
          sp[j] += static_cast<field::Wide>(x.p) * row[j].p;
          sq[j] += static_cast<field::Wide>(x.q) * row[j].q;
          ok[j] &= static_cast<char>(x.q_ok && row[j].q_ok);
        }
        if ((l + 1) % kLazy == 0)
          for (field::Wide& v : sp) v %= kFieldP;
      }
      for (size_t j = 0; j < w; ++j)
        out[i * n + j0 + static_cast<int64_t>(j)] = {static_cast<uint64_t>(sp[j] % kFieldP),
                                                     static_cast<uint64_t>(sq[j] % kFieldQ), ok[j] != 0};
    }
  }

  uint64_t omega_;
  uint64_t key_;
  bool undefined_ = false;
  uint64_t last_div_p_ = 0, last_inv_p_ = 0, last_div_q_ = 0, last_inv_q_ = 0;  // 0 is never a divisor
  std::vector<uint64_t> exp_low_, exp_high_;
};

}  // namespace tilevm::superopt
