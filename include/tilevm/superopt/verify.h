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
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "tilevm/superopt/graph.h"

namespace tilevm::superopt {

inline constexpr uint64_t kFieldQ = 2147483647ULL;           // 2^31 - 1
inline constexpr uint64_t kFieldP = 2305842935125508131ULL;  // 1073741790 * kFieldQ + 1, prime

// Throws Error when a path of `graph` (through block and thread graphs) applies exp to a value that already
// went through exp: outside the Lax fragment, where the verifier has no guarantee.
void check_lax(const Graph& graph);

struct ReferenceTrial;  // verify.cpp: one trial's outputs of the first graph

// The first graph's side of each trial, kept across the verifications of many candidates against one
// program: a trial's inputs, omega and random functions depend only on the seed, the trial's place in the
// sequence (redraws count) and the program's inputs, so the program's outputs in it are the same for every
// candidate, and each verification after the first evaluates the candidate alone (at a benchmark's sizes
// about half the work: a [16, 4096] x [4096, 4096] product is a second a trial). The results are those
// without it, bit for bit. Keyed by the program's text, the seed and the trial's place; thread-safe (the
// search verifies on several threads); it keeps every trial it was given until it is destroyed.
class ReferenceTrials {
 public:
  ReferenceTrials();
  ~ReferenceTrials();
  ReferenceTrials(const ReferenceTrials&) = delete;
  ReferenceTrials& operator=(const ReferenceTrials&) = delete;
  int64_t hits() const;  // trials served from what an earlier verification evaluated

  // verify.cpp's.
  std::shared_ptr<const ReferenceTrial> find(const std::string& program, uint64_t seed, int place);
  void keep(const std::string& program, uint64_t seed, int place,
            std::shared_ptr<const ReferenceTrial> trial);

 private:
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, uint64_t, int>, std::shared_ptr<const ReferenceTrial>> trials_;
  int64_t hits_ = 0;
};

struct VerifyOptions {
  int trials = 4;
  uint64_t seed = 1;
  // Where given, the first graph's trials are taken from it and added to it (ReferenceTrials).
  ReferenceTrials* reference = nullptr;
  // The paper's Theorem 3 as an option: when < 0, run as many more trials as it takes for the bound to reach
  // 2^target_log2_bound (at most max_trials), e.g. -128; the per-trial bound is computed first. Where it is
  // no bound at all (the degrees too high for the fields), only `trials` run.
  double target_log2_bound = 0;
  int max_trials = 256;
  // false (with target_log2_bound 0): the degree bound is not computed; the result says so. The search
  // verifies every candidate at the program's sizes, where evaluating the degree bounds of both graphs took
  // longer than its four trials (a gated MLP at [16, 4096] x [4096, 4096]: 36 s against 10 s a trial), and
  // the command verifies its answers again to a target bound.
  bool bound = true;
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
  bool bound_computed = false;  // log2_bound and log2_per_trial hold the bound (VerifyOptions::bound)
  std::string mismatch;         // NotEquivalent: the first output element that differed
  std::string summary() const;
};

// @pre both are kernel graphs with inputs of the same shapes, in order, and outputs of the same shapes
// (checked: Error otherwise). Deterministic for a seed.
VerifyResult verify_equivalent(const Graph& a, const Graph& b, const VerifyOptions& options = {});

}  // namespace tilevm::superopt
