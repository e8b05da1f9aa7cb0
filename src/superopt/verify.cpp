// The probabilistic equivalence verifier: random trials over Z_p and Z_q, and the bound on a false pass.
#include "tilevm/superopt/verify.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <random>
#include <system_error>
#include <thread>

#include "degree_algebra.h"
#include "evaluator.h"
#include "field_algebra.h"
#include "parallel_parts.h"
#include "tilevm/superopt/text.h"
#include "tilevm/support/file_io.h"
#include "tilevm/support/int_math.h"

namespace tilevm::superopt {

namespace {

// Whether each output of `g` went through exp; operand_after_exp[i]: operand i of its block or thread op did.
std::vector<bool> check_lax_graph(const Graph& g, const std::vector<bool>& operand_after_exp) {
  std::vector<bool> after(g.tensors().size(), false);
  size_t next_input = 0;
  for (const Op& op : g.ops()) {
    bool any = false;
    for (int id : op.inputs) any = any || after[id];
    switch (op.kind) {
      case OpKind::Input:
        any = g.level() == Level::Thread && operand_after_exp.at(next_input);
        ++next_input;
        break;
      case OpKind::Iter:
        any = operand_after_exp.at(op.operand);
        break;
      case OpKind::Exp:
        if (any)
          fail(
              "outside the Lax fragment: '{} = exp({})' applies exp to a value that already went through exp",
              g.tensor(op.outputs[0]).name, g.tensor(op.inputs[0]).name);
        any = true;
        break;
      case OpKind::Sqrt:
      case OpKind::Silu:
      case OpKind::Gelu:
      case OpKind::Relu:
        any = false;
        break;  // a fresh value for the verifier (field_algebra.h)
      case OpKind::Block:
      case OpKind::Thread: {
        std::vector<bool> operands;
        for (int id : op.inputs) operands.push_back(after[id]);
        std::vector<bool> inner = check_lax_graph(g.children()[op.child], operands);
        for (size_t i = 0; i < op.outputs.size(); ++i) after[op.outputs[i]] = inner[i];
        continue;
      }
      default:
        break;
    }
    for (int id : op.outputs) after[id] = any;
  }
  std::vector<bool> outputs;
  for (int id : g.outputs()) outputs.push_back(after[id]);
  return outputs;
}

void check_compatible(const Graph& a, const Graph& b) {
  if (a.level() != Level::Kernel || b.level() != Level::Kernel) fail("the verifier compares kernel graphs");
  std::vector<int> ia = a.inputs(), ib = b.inputs();
  if (ia.size() != ib.size()) fail("the graphs have {} and {} inputs", ia.size(), ib.size());
  for (size_t i = 0; i < ia.size(); ++i)
    if (a.tensor(ia[i]).shape != b.tensor(ib[i]).shape)
      fail("input {} has shape {} in one graph and {} in the other", i, shape_text(a.tensor(ia[i]).shape),
           shape_text(b.tensor(ib[i]).shape));
  if (a.outputs().size() != b.outputs().size())
    fail("the graphs have {} and {} outputs", a.outputs().size(), b.outputs().size());
  for (size_t i = 0; i < a.outputs().size(); ++i)
    if (a.tensor(a.outputs()[i]).shape != b.tensor(b.outputs()[i]).shape)
      fail("output {} has shape {} in one graph and {} in the other", i,
           shape_text(a.tensor(a.outputs()[i]).shape), shape_text(b.tensor(b.outputs()[i]).shape));
}

uint64_t mask_for(uint64_t m) {
  uint64_t mask = 1;
  while (mask < m - 1) mask = (mask << 1) | 1;
  return mask;
}

uint64_t uniform(std::mt19937_64& rng, uint64_t m) {
  // Rejection sampling: exactly uniform in [0, m).
  const uint64_t mask = mask_for(m);
  for (;;) {
    uint64_t v = rng() & mask;
    if (v < m) return v;
  }
}

// SplitMix64's output function (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
// 2014): a bijection of 64-bit words whose outputs over consecutive inputs pass BigCrush.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Draw `draw` of a trial's input stream `key`, uniform in [0, m) by rejection: a function of its place alone,
// so that the inputs fill in any order, on any number of threads, to the same values. Attempt a of draw d is
// word 64 d + a of the stream (a rejection has probability below 1/2, 64 in a row below 2^-64; past them
// the attempts run on into the next draw's words, which changes no value's distribution).
uint64_t uniform_at(uint64_t key, uint64_t draw, uint64_t m, uint64_t mask) {
  for (uint64_t a = 0;; ++a) {
    const uint64_t v = mix64(key + (64 * draw + a) * 0x9e3779b97f4a7c15ull) & mask;
    if (v < m) return v;
  }
}

// The trial's inputs: element e of the inputs laid end to end is (draw 2e mod p, draw 2e + 1 mod q) of the
// stream `key`. Drawn on all cores past 2^16 elements: at the benchmarks' sizes (50 million elements for the
// gated MLP) a sequential generator took a quarter of each trial.
std::vector<Array<FieldValue>> trial_inputs(const Graph& a, uint64_t key) {
  std::vector<Array<FieldValue>> inputs;
  std::vector<int64_t> first;  // each input's first element in the flat order
  int64_t total = 0;
  for (int id : a.inputs()) {
    Array<FieldValue> in{a.tensor(id).shape, {}};
    in.data.resize(static_cast<size_t>(element_count(in.shape)));
    first.push_back(total);
    total += static_cast<int64_t>(in.data.size());
    inputs.push_back(std::move(in));
  }
  const uint64_t mask_p = mask_for(kFieldP), mask_q = mask_for(kFieldQ);
  auto fill = [&](int64_t lo, int64_t hi) {  // flat elements [lo, hi)
    for (size_t j = 0; j < inputs.size(); ++j) {
      const int64_t begin = std::max(lo, first[j]);
      const int64_t end = std::min(hi, first[j] + static_cast<int64_t>(inputs[j].data.size()));
      for (int64_t e = begin; e < end; ++e) {
        const uint64_t d = 2 * static_cast<uint64_t>(e);
        inputs[j].data[static_cast<size_t>(e - first[j])] = {uniform_at(key, d, kFieldP, mask_p),
                                                             uniform_at(key, d + 1, kFieldQ, mask_q), true};
      }
    }
  };
  const int64_t threads =
      total >= (int64_t{1} << 16) ? std::max<int64_t>(1, std::thread::hardware_concurrency()) : 1;
  for_each_part(total, threads, fill);
  return inputs;
}

// The probability that a nonzero expression with these bounds evaluates to zero in one trial (the
// derivation is in docs/superopt.md): Schwartz-Zippel over Z_p for the polynomial part, Schwartz-Zippel over
// Z_q for two exponents colliding, and (k - 1) / q for a k-term sum over the roots of unity.
double zero_probability(const PolyBound& poly) {
  double p = poly.deg / static_cast<double>(kFieldP);
  if (poly.terms > 1) {
    double pairs = poly.terms * (poly.terms - 1) / 2;
    p += (pairs * (poly.exp_num + poly.exp_den) + (poly.terms - 1)) / static_cast<double>(kFieldQ);
  }
  return p;
}

// log2 of the per-trial bound for a non-equivalent pair.
double log2_per_trial_bound(const Graph& a, const Graph& b) {
  DegreeAlgebra alg;
  std::vector<Array<DegreeValue>> inputs;
  for (int id : a.inputs()) {
    Array<DegreeValue> in{a.tensor(id).shape, {}};
    for (int64_t i = 0; i < element_count(in.shape); ++i) in.data.push_back(alg.input());
    inputs.push_back(std::move(in));
  }
  std::vector<const Array<DegreeValue>*> pointers;
  for (const Array<DegreeValue>& in : inputs) pointers.push_back(&in);
  Evaluator<DegreeAlgebra> evaluator(alg);
  std::vector<Array<DegreeValue>> oa = evaluator.run(a, pointers), ob = evaluator.run(b, pointers);
  double worst = 0;
  for (size_t o = 0; o < oa.size(); ++o)
    for (size_t i = 0; i < oa[o].data.size(); ++i)
      worst = std::max(worst, zero_probability(alg.difference(oa[o].data[i], ob[o].data[i])));
  double m = alg.applications();
  double collisions = m * (m - 1) / 2 * zero_probability(alg.argument_difference());
  return std::log2(std::min(1.0, worst + collisions));
}

struct Trial {
  bool undefined = false;
  std::string mismatch;
};

}  // namespace

struct ReferenceTrial {
  std::vector<Array<FieldValue>> outputs;
  bool undefined = false;
};

ReferenceTrials::ReferenceTrials() = default;
ReferenceTrials::~ReferenceTrials() = default;

int64_t ReferenceTrials::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

std::shared_ptr<const ReferenceTrial> ReferenceTrials::find(const std::string& program, uint64_t seed,
                                                            int place) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = trials_.find({program, seed, place});
  if (it == trials_.end()) return nullptr;
  ++hits_;
  return it->second;
}

void ReferenceTrials::keep(const std::string& program, uint64_t seed, int place,
                           std::shared_ptr<const ReferenceTrial> trial) {
  std::lock_guard<std::mutex> lock(mutex_);
  trials_.emplace(std::make_tuple(program, seed, place),
                  std::move(trial));  // a twin computed meanwhile stays
}

namespace {

// Trial `place` of a verification: its draws, then both graphs (a's from `reference` where it has it).
// `program` is a's text when `reference` is given.
Trial run_trial(const Graph& a, const Graph& b, std::mt19937_64& rng, ReferenceTrials* reference,
                const std::string& program, uint64_t seed, int place) {
  // omega = g^((p-1)/q) for a uniform g in Z_p^* is uniform over the q-th roots of unity.
  uint64_t g = 1 + uniform(rng, kFieldP - 1);
  uint64_t omega = field::pow_mod(g, (kFieldP - 1) / kFieldQ, kFieldP);
  // One algebra per graph (the same omega and key: the same exp and the same random functions), so that
  // large graphs evaluate side by side on two threads; an algebra keeps caches and is not shared.
  const uint64_t key = rng();
  FieldAlgebra alg_a(omega, key), alg_b(omega, key);
  const std::vector<Array<FieldValue>> inputs = trial_inputs(a, rng());
  std::vector<const Array<FieldValue>*> pointers;
  for (const Array<FieldValue>& in : inputs) pointers.push_back(&in);
  std::shared_ptr<const ReferenceTrial> kept = reference ? reference->find(program, seed, place) : nullptr;
  auto run_a = [&] {
    auto r = std::make_shared<ReferenceTrial>();
    r->outputs = Evaluator<FieldAlgebra>(alg_a).run(a, pointers);
    r->undefined = alg_a.undefined();
    return std::shared_ptr<const ReferenceTrial>(std::move(r));
  };
  auto run_b = [&] { return Evaluator<FieldAlgebra>(alg_b).run(b, pointers); };
  int64_t elements = 0;
  for (const Array<FieldValue>& in : inputs) elements += static_cast<int64_t>(in.data.size());
  std::vector<Array<FieldValue>> ob;
  std::future<std::shared_ptr<const ReferenceTrial>> side;
  if (!kept && elements >= (int64_t{1} << 16)) {  // small graphs (the search's) are not worth a thread
    try {
      side = std::async(std::launch::async, run_a);
    } catch (const std::system_error&) {  // no thread to be had: both here
    }
  }
  ob = run_b();
  if (!kept) {
    kept = side.valid() ? side.get() : run_a();
    if (reference) reference->keep(program, seed, place, kept);
  }
  const std::vector<Array<FieldValue>>& oa = kept->outputs;
  Trial trial;
  if (kept->undefined || alg_b.undefined()) {
    trial.undefined = true;
    return trial;
  }
  for (size_t o = 0; o < oa.size(); ++o)
    for (size_t i = 0; i < oa[o].data.size(); ++i)
      if (oa[o].data[i].p != ob[o].data[i].p) {
        trial.mismatch = fmt::format("output {} ('{}') element {}: {} != {} mod p", o,
                                     a.tensor(a.outputs()[o]).name, i, oa[o].data[i].p, ob[o].data[i].p);
        return trial;
      }
  return trial;
}

}  // namespace

void check_lax(const Graph& graph) {
  check_lax_graph(graph, {});
}

namespace {

int64_t evaluated_elements(const Graph& g) {
  int64_t n = 0;
  for (const TensorDecl& t : g.tensors()) n += element_count(t.shape);
  for (const Graph& child : g.children()) n += evaluated_elements(child);
  return n;
}

}  // namespace

int64_t verification_bytes(const Graph& a, const Graph& b) {
  constexpr int64_t kValueBytes = std::max(sizeof(FieldValue), sizeof(DegreeValue));
  return (evaluated_elements(a) + evaluated_elements(b)) * kValueBytes;
}

VerifyResult verify_equivalent(const Graph& a, const Graph& b, const VerifyOptions& options) {
  if (options.trials < 1) fail("the verifier needs at least one trial, got {}", options.trials);
  check_compatible(a, b);
  if (options.max_memory_bytes > 0) {
    const int64_t need = verification_bytes(a, b);
    if (need > options.max_memory_bytes)
      fail(
          "verifying a graph against '{}' needs about {} of memory (every tensor of both graphs at these "
          "sizes), more than the budget of {}",
          a.name(), format_bytes(need), format_bytes(options.max_memory_bytes));
  }
  check_lax(a);
  check_lax(b);
  VerifyResult result;
  int trials = options.trials;
  double per_trial = 0;
  if (options.target_log2_bound < 0) {
    per_trial = log2_per_trial_bound(a, b);
    // Without a useful per-trial bound (>= 1) more trials would not lower the bound: the given ones run.
    int needed =
        per_trial < 0 ? static_cast<int>(std::ceil(options.target_log2_bound / per_trial)) : options.trials;
    trials = std::clamp(needed, trials, std::max(trials, options.max_trials));
  }
  std::mt19937_64 rng(options.seed);
  const std::string program = options.reference ? print_graph(a) : std::string();
  while (result.trials < trials) {
    Trial trial =
        run_trial(a, b, rng, options.reference, program, options.seed, result.trials + result.redraws);
    if (trial.undefined) {
      if (++result.redraws > options.max_redraws) return result;  // Inconclusive
      continue;
    }
    if (!trial.mismatch.empty()) {
      result.verdict = Verdict::NotEquivalent;
      result.mismatch = std::move(trial.mismatch);
      return result;
    }
    ++result.trials;
  }
  result.verdict = Verdict::Equivalent;
  if (options.target_log2_bound < 0 || options.bound) {
    result.log2_per_trial = options.target_log2_bound < 0 ? per_trial : log2_per_trial_bound(a, b);
    result.log2_bound = result.log2_per_trial * result.trials;
    result.bound_computed = true;
  }
  return result;
}

std::string VerifyResult::summary() const {
  switch (verdict) {
    case Verdict::Equivalent:
      if (!bound_computed)
        return fmt::format("equivalent: {} of {} trials agree (p = {}, q = {}); the bound was not computed",
                           trials, trials, kFieldP, kFieldQ);
      if (log2_per_trial >= 0)
        return fmt::format(
            "equivalent: {} of {} trials agree (p = {}, q = {}); no useful bound: the degrees are "
            "too high for these fields",
            trials, trials, kFieldP, kFieldQ);
      return fmt::format(
          "equivalent: {} of {} trials agree (p = {}, q = {}); a non-equivalent pair passes with "
          "probability <= 2^{:.1f} (2^{:.1f} per trial)",
          trials, trials, kFieldP, kFieldQ, log2_bound, log2_per_trial);
    case Verdict::NotEquivalent:
      return fmt::format("not equivalent: {} (after {} agreeing trials)", mismatch, trials);
    case Verdict::Inconclusive:
      return fmt::format("inconclusive: {} trials divided by zero", redraws);
  }
  return "?";
}

}  // namespace tilevm::superopt
