// The probabilistic equivalence verifier (Mirage, paper section 5): two graphs are evaluated on the same
// random inputs over finite fields, k independent trials, and accepted when every output element agrees in
// every trial. Equivalent graphs always pass (up to a trial that divides by zero, which is drawn again);
// non-equivalent graphs pass with probability at most `bound`, computed for the two graphs at hand from
// degree bounds of what they compute (docs/superopt.md derives it) and printed with every result:
//
//   equivalent: 4 of 4 trials agree (p = 2305842935125508131, q = 2147483647); a non-equivalent pair
//   passes with probability <= 2^-224.0 (2^-56.0 per trial)
//
// Fields: values live in Z_p, p = 1073741790 * q + 1 (61 bits); exponents in Z_q, q = 2^31 - 1 (31 bits),
// q | p - 1, exp(x) = omega^(x mod q) for a random q-th root of unity omega in Z_p.
#pragma once

#include <cstdint>
#include <string>

#include "tilevm/superopt/graph.h"

namespace tilevm::superopt {

inline constexpr uint64_t kFieldQ = 2147483647ULL;           // 2^31 - 1
inline constexpr uint64_t kFieldP = 2305842935125508131ULL;  // 1073741790 * kFieldQ + 1, prime

// Throws Error when a path of `graph` (through block and thread graphs) applies exp to a value that already
// went through exp: outside the Lax fragment, where the verifier has no guarantee.
void check_lax(const Graph& graph);

struct VerifyOptions {
  int trials = 4;
  uint64_t seed = 1;
  // The paper's Theorem 3 as an option: when < 0, run as many more trials as it takes for the bound to reach
  // 2^target_log2_bound (at most max_trials), e.g. -128; the per-trial bound is computed first. Where it is
  // no bound at all (the degrees too high for the fields), only `trials` run.
  double target_log2_bound = 0;
  int max_trials = 256;
  // Trials that divided by zero are drawn again, at most this many times in all.
  int max_redraws = 16;
  // > 0: refuse (tilevm::Error, with both figures) to verify graphs whose evaluation would need more than
  // this many bytes by verification_bytes, instead of exhausting the machine's memory part way.
  int64_t max_memory_bytes = 0;
};

// About the bytes verifying `a` against `b` holds at once: every tensor of both graphs at the program's
// sizes (the evaluator keeps each; the two graphs of a trial evaluate side by side), each element a value
// of the larger of the two algebras (the fields' and the degree bound's), counting a block or thread
// graph's tensors once.
int64_t verification_bytes(const Graph& a, const Graph& b);

enum class Verdict { Equivalent, NotEquivalent, Inconclusive };

struct VerifyResult {
  Verdict verdict = Verdict::Inconclusive;
  int trials = 0;         // trials that agreed (all of them when Equivalent)
  int redraws = 0;        // trials drawn again after a division by zero
  double log2_bound = 0;  // log2 of the probability that a non-equivalent pair passes all trials
  double log2_per_trial = 0;
  std::string mismatch;  // NotEquivalent: the first output element that differed
  std::string summary() const;
};

// @pre both are kernel graphs with inputs of the same shapes, in order, and outputs of the same shapes
// (checked: Error otherwise). Deterministic for a seed.
VerifyResult verify_equivalent(const Graph& a, const Graph& b, const VerifyOptions& options = {});

}  // namespace tilevm::superopt
