// The finite-field equivalence verifier: known-equivalent rewrites pass for random shapes and partitions,
// known-different graphs fail, and the bound it prints is the documented one.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <thread>

#include "expect_error.h"
#include "superopt_test_util.h"
#include "tilevm/superopt/text.h"
#include "tilevm/superopt/verify.h"

#include "../../src/superopt/field_algebra.h"

namespace tilevm::superopt {
namespace {

using testing::test_graph;

VerifyResult verify_text(const std::string& a, const std::string& b, uint64_t seed = 1) {
  return verify_equivalent(parse_graph(a), parse_graph(b), {.trials = 4, .seed = seed});
}

void expect_equivalent(const std::string& a, const std::string& b, uint64_t seed = 1) {
  VerifyResult r = verify_text(a, b, seed);
  EXPECT_EQ(r.verdict, Verdict::Equivalent) << r.summary() << "\n" << a << b;
}

void expect_different(const std::string& a, const std::string& b) {
  VerifyResult r = verify_text(a, b);
  EXPECT_EQ(r.verdict, Verdict::NotEquivalent) << r.summary() << "\n" << a << b;
}

std::string kernel(const std::string& inputs, const std::string& body) {
  return "kernel k {\n" + inputs + body + "  output Y\n}\n";
}

std::string input(const char* name, int64_t rows, int64_t cols) {
  return fmt::format("  input {} [{}, {}]\n", name, rows, cols);
}

RC_GTEST_PROP(SuperoptVerify, MatmulDistributesOverAdd, ()) {
  int64_t m = *rc::gen::inRange(1, 6), k = *rc::gen::inRange(1, 6), n = *rc::gen::inRange(1, 6);
  std::string in = input("A", m, k) + input("B", k, n) + input("C", k, n);
  RC_ASSERT(verify_text(kernel(in, "  S = add(B, C)\n  Y = matmul(A, S)\n"),
                        kernel(in, "  P = matmul(A, B)\n  Q = matmul(A, C)\n  Y = add(P, Q)\n"),
                        *rc::gen::arbitrary<uint64_t>())
                .verdict == Verdict::Equivalent);
}

RC_GTEST_PROP(SuperoptVerify, MatmulIsAssociative, ()) {
  int64_t m = *rc::gen::inRange(1, 5), k = *rc::gen::inRange(1, 5), l = *rc::gen::inRange(1, 5),
          n = *rc::gen::inRange(1, 5);
  std::string in = input("A", m, k) + input("B", k, l) + input("C", l, n);
  RC_ASSERT(verify_text(kernel(in, "  P = matmul(A, B)\n  Y = matmul(P, C)\n"),
                        kernel(in, "  Q = matmul(B, C)\n  Y = matmul(A, Q)\n"),
                        *rc::gen::arbitrary<uint64_t>())
                .verdict == Verdict::Equivalent);
}

RC_GTEST_PROP(SuperoptVerify, SumSplitOverTheLoopWithAnAccumulator, ()) {
  int64_t blocks = *rc::gen::inRange(1, 4), loop = *rc::gen::inRange(1, 4), chunk = *rc::gen::inRange(1, 4);
  int64_t rows = blocks * *rc::gen::inRange(1, 3), cols = loop * chunk;
  std::string in = input("X", rows, cols);
  std::string blocked = fmt::format(
      "  (Y) = block(X) grid=[{}] loop={} {{\n    x = iter(X) imap=[0] fmap=1\n    s = sum(x) dim=1\n"
      "    a = accum(s) fmap=-\n    y = save(a) omap=[0]\n  }}\n",
      blocks, loop);
  RC_ASSERT(
      verify_text(kernel(in, "  Y = sum(X) dim=1\n"), kernel(in, blocked), *rc::gen::arbitrary<uint64_t>())
          .verdict == Verdict::Equivalent);
}

RC_GTEST_PROP(SuperoptVerify, BlockMatmulEqualsTheKernelOp, ()) {
  int64_t gx = *rc::gen::inRange(1, 3), gy = *rc::gen::inRange(1, 3), loop = *rc::gen::inRange(1, 4);
  int64_t m = gx * *rc::gen::inRange(1, 3), n = gy * *rc::gen::inRange(1, 3),
          k = loop * *rc::gen::inRange(1, 3);
  std::string in = input("A", m, k) + input("B", k, n);
  std::string blocked = fmt::format(
      "  (Y) = block(A, B) grid=[{}, {}] loop={} {{\n    a = iter(A) imap=[0, -] fmap=1\n"
      "    b = iter(B) imap=[-, 1] fmap=0\n    c = matmul(a, b)\n    acc = accum(c) fmap=-\n"
      "    y = save(acc) omap=[0, 1]\n  }}\n",
      gx, gy, loop);
  RC_ASSERT(
      verify_text(kernel(in, "  Y = matmul(A, B)\n"), kernel(in, blocked), *rc::gen::arbitrary<uint64_t>())
          .verdict == Verdict::Equivalent);
}

RC_GTEST_PROP(SuperoptVerify, RmsNormFusedEqualsUnfused, ()) {
  int64_t rows = *rc::gen::inRange(1, 5), cols = *rc::gen::inRange(1, 9);
  std::string in = input("X", rows, cols);
  std::string unfused = fmt::format(
      "  Q = square(X)\n  S = sum(Q) dim=1\n  N = const(1/{}) shape=[1, 1]\n  M = mul(S, N)\n"
      "  E = const(1e-5) shape=[1, 1]\n  V = add(M, E)\n  R = sqrt(V)\n  Y = div(X, R)\n",
      cols);
  RC_ASSERT(verify_text(kernel(in, "  Y = rms_norm(X) eps=1e-5\n"), kernel(in, unfused),
                        *rc::gen::arbitrary<uint64_t>())
                .verdict == Verdict::Equivalent);
}

TEST(SuperoptVerify, FusedWorkloadsEqualTheirPrograms) {
  for (auto [program, fused] : {std::pair{"rmsnorm_linear.graph", "rmsnorm_linear_fused.graph"},
                                std::pair{"attention.graph", "attention_fused.graph"}}) {
    // Attention's per-trial bound is weak (2^-9: the softmax sum has 32 exponential terms, and pairs of
    // them could collide mod q), so this asks for enough trials.
    VerifyResult r = verify_equivalent(test_graph(program), test_graph(fused), {.trials = 24});
    EXPECT_EQ(r.verdict, Verdict::Equivalent) << fused << ": " << r.summary();
    EXPECT_LT(r.log2_bound, -200) << r.summary();
    std::printf("%s: %s\n", fused, r.summary().c_str());
  }
}

// The field's exp reads two tables of powers of omega; it must equal omega^e computed by square and
// multiply, at the ends of the exponent range and at random exponents; a divisor repeated or changed gives
// the same quotients as fresh inverses.
TEST(SuperoptVerify, FieldExpTablesAndDivisionAgreeWithPowers) {
  std::mt19937_64 rng(7);
  const uint64_t omega = field::pow_mod(12345, (kFieldP - 1) / kFieldQ, kFieldP);
  FieldAlgebra alg(omega, 1);
  std::vector<uint64_t> exponents = {0, 1, 0xffff, 0x10000, 0x10001, kFieldQ - 1};
  for (int k = 0; k < 1000; ++k) exponents.push_back(rng() % kFieldQ);
  for (uint64_t e : exponents)
    ASSERT_EQ(alg.exp({0, e, true}).p, field::pow_mod(omega, e, kFieldP)) << "exponent " << e;
  for (uint64_t b : std::vector<uint64_t>{3, 3, 5, 3, kFieldQ - 1}) {
    const FieldValue x{rng() % kFieldP, rng() % kFieldQ, true}, d{b * 1000003ULL % kFieldP, b, true};
    const FieldValue r = alg.div(x, d);
    EXPECT_EQ(field::mul_mod(r.p, d.p, kFieldP), x.p);
    EXPECT_EQ(field::mul_mod(r.q, d.q, kFieldQ), x.q);
  }
  EXPECT_FALSE(alg.undefined());
}

// Graphs with 2^16 input elements or more evaluate side by side on two threads: the verdicts must not change.
TEST(SuperoptVerify, LargeGraphsOnTwoThreads) {
  const std::string in = input("A", 256, 128) + input("B", 256, 128);
  const std::string softmax = "  S = add(A, B)\n  E = exp(S)\n  Z = sum(E) dim=1\n  Y = div(E, Z)\n";
  expect_equivalent(
      kernel(in, softmax),
      kernel(in, "  P = exp(A)\n  Q = exp(B)\n  E = mul(P, Q)\n  Z = sum(E) dim=1\n  Y = div(E, Z)\n"));
  expect_different(
      kernel(in, softmax),
      kernel(in, "  P = exp(A)\n  Q = exp(B)\n  E = add(P, Q)\n  Z = sum(E) dim=1\n  Y = div(E, Z)\n"));
}

// The memory budget: verification_bytes counts every tensor of both graphs (a block graph's once), and a
// budget below it is refused before anything is evaluated, with both figures; at the figure it runs.
TEST(SuperoptVerify, TheMemoryBudgetIsCheckedBeforeEvaluating) {
  const std::string in = input("A", 64, 32) + input("B", 64, 32);
  const Graph a = parse_graph(kernel(in, "  S = add(A, B)\n  Y = exp(S)\n"));
  const Graph b = parse_graph(kernel(in, "  P = exp(A)\n  Q = exp(B)\n  Y = mul(P, Q)\n"));
  // 4 and 5 tensors of 64 x 32 elements, each value at least a FieldValue's 24 bytes.
  const int64_t need = verification_bytes(a, b);
  EXPECT_EQ(need % (9 * 64 * 32), 0);
  EXPECT_GE(need, 9 * 64 * 32 * static_cast<int64_t>(sizeof(FieldValue)));
  expect_error([&] { verify_equivalent(a, b, {.max_memory_bytes = need - 1}); }, "more than the budget of");
  EXPECT_EQ(verify_equivalent(a, b, {.max_memory_bytes = need}).verdict, Verdict::Equivalent);
}

TEST(SuperoptVerify, ExpIsAHomomorphism) {
  std::string in = input("A", 2, 3) + input("B", 2, 3);
  expect_equivalent(kernel(in, "  S = add(A, B)\n  Y = exp(S)\n"),
                    kernel(in, "  P = exp(A)\n  Q = exp(B)\n  Y = mul(P, Q)\n"));
  expect_different(kernel(in, "  S = add(A, B)\n  Y = exp(S)\n"),
                   kernel(in, "  P = exp(A)\n  Q = exp(B)\n  Y = add(P, Q)\n"));
  // exp(2a) = exp(a)^2 and exp(a / 2)^2 = exp(a): constants inside the exponent are exact in Z_q.
  expect_equivalent(kernel(in, "  C = const(2) shape=[1, 1]\n  S = mul(A, C)\n  Y = exp(S)\n"),
                    kernel(in, "  P = exp(A)\n  Y = square(P)\n"));
  expect_equivalent(
      kernel(in, "  C = const(0.5) shape=[1, 1]\n  S = mul(A, C)\n  E = exp(S)\n  Y = square(E)\n"),
      kernel(in, "  Y = exp(A)\n"));
  expect_different(kernel(in, "  C = const(3) shape=[1, 1]\n  S = mul(A, C)\n  Y = exp(S)\n"),
                   kernel(in, "  P = exp(A)\n  Y = square(P)\n"));
}

TEST(SuperoptVerify, SoftmaxDivisionCommutesWithTheMatmul) {
  std::string in = input("S", 3, 5) + input("V", 5, 2);
  expect_equivalent(kernel(in, "  E = exp(S)\n  Z = sum(E) dim=1\n  P = div(E, Z)\n  Y = matmul(P, V)\n"),
                    kernel(in, "  E = exp(S)\n  Z = sum(E) dim=1\n  O = matmul(E, V)\n  Y = div(O, Z)\n"));
  expect_different(kernel(in, "  E = exp(S)\n  Z = sum(E) dim=1\n  P = div(E, Z)\n  Y = matmul(P, V)\n"),
                   kernel(in, "  E = exp(S)\n  Z = sum(E) dim=1\n  O = matmul(E, V)\n  Y = mul(O, Z)\n"));
}

TEST(SuperoptVerify, ThreadGraphEqualsTheUnfusedChain) {
  std::string in = input("A", 4, 4) + input("B", 4, 4);
  std::string fused =
      "  (Y) = block(A, B) grid=[2, 2] loop=1 {\n    a = iter(A) imap=[0, 1] fmap=-\n"
      "    b = iter(B) imap=[0, 1] fmap=-\n    (t) = thread(a, b) {\n      input x [2, 2]\n      input y [2, "
      "2]\n"
      "      m = mul(x, y)\n      e = exp(m)\n      s = silu(e)\n      output s\n    }\n"
      "    acc = accum(t) fmap=-\n    o = save(acc) omap=[0, 1]\n  }\n";
  expect_equivalent(kernel(in, "  M = mul(A, B)\n  E = exp(M)\n  Y = silu(E)\n"), kernel(in, fused));
  expect_different(kernel(in, "  M = mul(A, B)\n  E = exp(M)\n  Y = gelu(E)\n"), kernel(in, fused));
}

TEST(SuperoptVerify, DifferentGraphsAreRejected) {
  std::string sq = input("A", 3, 3) + input("B", 3, 3);
  expect_different(kernel(sq, "  Y = matmul(A, B)\n"), kernel(sq, "  Y = matmul(B, A)\n"));
  expect_different(kernel(sq, "  Y = silu(A)\n"), kernel(sq, "  Y = gelu(A)\n"));
  expect_different(kernel(sq, "  Y = rms_norm(A) eps=1e-6\n"), kernel(sq, "  Y = rms_norm(A) eps=1e-5\n"));
  // Transposed block placement: same shapes, different elements.
  std::string blocked =
      "  (Y) = block(A) grid=[3, 3] loop=1 {{\n    a = iter(A) imap=[0, 1] fmap=-\n"
      "    acc = accum(a) fmap=-\n    o = save(acc) omap={}\n  }}\n";
  expect_different(kernel(sq, fmt::format(fmt::runtime(blocked), "[0, 1]")),
                   kernel(sq, fmt::format(fmt::runtime(blocked), "[1, 0]")));
  // Incomplete by design: sqrt is uninterpreted, so sqrt(a)^2 = a is not proven (and not wrongly accepted).
  expect_different(kernel(sq, "  R = sqrt(A)\n  Y = square(R)\n"), kernel(sq, "  Y = add(A, A)\n"));
}

TEST(SuperoptVerify, ResultsPrintTheirBound) {
  std::string in = input("A", 2, 2) + input("B", 2, 2);
  VerifyResult same = verify_text(kernel(in, "  Y = add(A, B)\n"), kernel(in, "  Y = add(B, A)\n"));
  ASSERT_EQ(same.verdict, Verdict::Equivalent);
  EXPECT_EQ(same.trials, 4);
  // Per trial: degree 1 over p ~ 2^61, so about 2^-61; four trials multiply.
  EXPECT_NEAR(same.log2_per_trial, -61.0, 0.1);
  EXPECT_NEAR(same.log2_bound, 4 * same.log2_per_trial, 1e-9);
  EXPECT_EQ(same.summary(),
            fmt::format("equivalent: 4 of 4 trials agree (p = 2305842935125508131, q = 2147483647); a "
                        "non-equivalent pair passes with probability <= 2^{:.1f} (2^{:.1f} per trial)",
                        same.log2_bound, same.log2_per_trial));
  VerifyResult different = verify_text(kernel(in, "  Y = add(A, B)\n"), kernel(in, "  Y = mul(B, A)\n"));
  EXPECT_EQ(different.summary().rfind("not equivalent: output 0 ('Y') element 0: ", 0), 0)
      << different.summary();
  expect_error([&] { verify_text(kernel(in, "  Y = add(A, B)\n"), kernel(in, "  Y = sum(A) dim=1\n")); },
               "output 0 has shape [2, 2] in one graph and [2, 1] in the other");
}

// The search's verifications skip the degree bound (VerifyOptions::bound); the verdict and trials are the
// same, and the summary says the bound was not computed rather than print a bound of 2^0.
TEST(SuperoptVerify, TheBoundCanBeLeftOut) {
  const Graph program = test_graph("rmsnorm_linear.graph"), fused = test_graph("rmsnorm_linear_fused.graph");
  const VerifyResult with = verify_equivalent(program, fused, {.trials = 2});
  const VerifyResult without = verify_equivalent(program, fused, {.trials = 2, .bound = false});
  EXPECT_TRUE(with.bound_computed);
  EXPECT_LT(with.log2_bound, -100);
  EXPECT_FALSE(without.bound_computed);
  EXPECT_EQ(without.verdict, Verdict::Equivalent);
  EXPECT_EQ(without.trials, 2);
  EXPECT_EQ(without.summary(),
            "equivalent: 2 of 2 trials agree (p = 2305842935125508131, q = 2147483647); the bound was not "
            "computed");
  // A target bound needs the bound: it is computed whatever `bound` says.
  EXPECT_TRUE(verify_equivalent(program, fused, {.trials = 1, .target_log2_bound = -64, .bound = false})
                  .bound_computed);
}

TEST(SuperoptVerify, RunsTheTrialsATargetBoundNeeds) {
  // Attention's per-trial bound is 2^-9.0, so 2^-128 takes 15 trials; RMSNorm + Linear's 2^-51.9 takes 3.
  VerifyOptions options{.trials = 1, .target_log2_bound = -128};
  VerifyResult attention =
      verify_equivalent(test_graph("attention.graph"), test_graph("attention_fused.graph"), options);
  EXPECT_EQ(attention.trials, 15) << attention.summary();
  EXPECT_LE(attention.log2_bound, -128);
  VerifyResult rms = verify_equivalent(test_graph("rmsnorm_linear.graph"),
                                       test_graph("rmsnorm_linear_fused.graph"), options);
  EXPECT_EQ(rms.trials, 3) << rms.summary();
  EXPECT_LE(rms.log2_bound, -128);
}

TEST(SuperoptVerify, NoUsefulBoundRunsOnlyTheGivenTrials) {
  // Attention over 1024 tokens: the union bound over pairs of exponential terms colliding mod q exceeds 1,
  // so extra trials would not lower it; the given 2 run and the summary says there is no useful bound.
  // The scores and their exponentials, then the two orders of the division.
  const std::string head = R"(kernel a {
  input Q [1, 2, 4]
  input K [1, 4, 1024]
  input V [1, 1024, 4]
  S = matmul(Q, K)
  E = exp(S)
  Z = sum(E) dim=2
)";
  const Graph program = parse_graph(head + "  P = div(E, Z)\n  O = matmul(P, V)\n  output O\n}\n");
  const Graph same = parse_graph(head + "  EV = matmul(E, V)\n  O = div(EV, Z)\n  output O\n}\n");
  VerifyResult r =
      verify_equivalent(program, same, {.trials = 2, .target_log2_bound = -64, .max_trials = 64});
  EXPECT_EQ(r.verdict, Verdict::Equivalent);
  EXPECT_GE(r.log2_per_trial, 0) << r.summary();
  EXPECT_EQ(r.trials, 2) << r.summary();
  EXPECT_NE(r.summary().find("no useful bound"), std::string::npos) << r.summary();
}

// A program's trials kept across candidates (ReferenceTrials) give every verification the result it has
// without them, and each verification after the first evaluates the program no more. Two programs (and two
// seeds) share one store without mixing; several threads at once too.
TEST(SuperoptVerify, ReferenceTrialsChangeNoResult) {
  const Graph program = test_graph("rmsnorm_linear.graph");
  const Graph fused = test_graph("rmsnorm_linear_fused.graph");
  const Graph attention = test_graph("attention.graph");
  const Graph attention_fused = test_graph("attention_fused.graph");
  // Not equivalent: the same program with its output scaled (every trial differs).
  const std::string text = print_graph(program);
  const size_t out = text.rfind("  output ");
  ASSERT_NE(out, std::string::npos) << text;
  const std::string name = text.substr(out + 9, text.find('\n', out) - out - 9);
  const Graph doubled =
      parse_graph(text.substr(0, out) + "  D = add(" + name + ", " + name + ")\n  output D\n}\n");
  struct Case {
    const Graph* a;
    const Graph* b;
    VerifyOptions options;
  };
  const Case cases[] = {{&program, &fused, {.trials = 3, .seed = 5}},
                        {&program, &doubled, {.trials = 3, .seed = 5}},
                        {&program, &fused, {.trials = 1, .seed = 5, .target_log2_bound = -128}},
                        {&program, &fused, {.trials = 3, .seed = 6}},
                        {&attention, &attention_fused, {.trials = 2, .seed = 5}},
                        {&program, &fused, {.trials = 3, .seed = 5}}};
  auto same = [](const VerifyResult& x, const VerifyResult& y) {
    EXPECT_EQ(x.verdict, y.verdict);
    EXPECT_EQ(x.trials, y.trials);
    EXPECT_EQ(x.redraws, y.redraws);
    EXPECT_EQ(x.log2_bound, y.log2_bound);
    EXPECT_EQ(x.mismatch, y.mismatch);
  };
  ReferenceTrials reference;
  int64_t expected_hits = 0;
  int max_place[2][7] = {};  // per program (rms, attention) and seed: the places evaluated so far
  for (const Case& c : cases) {
    SCOPED_TRACE(c.b->name() + " seed " + std::to_string(c.options.seed));
    const VerifyResult alone = verify_equivalent(*c.a, *c.b, c.options);
    VerifyOptions with = c.options;
    with.reference = &reference;
    const VerifyResult kept = verify_equivalent(*c.a, *c.b, with);
    same(alone, kept);
    const int places = kept.trials + kept.redraws + (kept.verdict == Verdict::NotEquivalent ? 1 : 0);
    int& seen = max_place[c.a == &attention ? 1 : 0][c.options.seed];
    expected_hits += std::min(places, seen);
    seen = std::max(seen, places);
    EXPECT_EQ(reference.hits(), expected_hits);
  }
  EXPECT_GT(expected_hits, 0);
  // From four threads at once, against a fresh store: the same results.
  ReferenceTrials shared;
  std::vector<VerifyResult> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      results[t] =
          verify_equivalent(program, t % 2 ? doubled : fused, {.trials = 3, .seed = 5, .reference = &shared});
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 4; ++t)
    same(results[t], verify_equivalent(program, t % 2 ? doubled : fused, {.trials = 3, .seed = 5}));
}

TEST(SuperoptVerify, FieldsAreTheDocumentedPrimes) {
  // q = 2^31 - 1 and p = 1073741790 q + 1: q | p - 1, so Z_p has the q-th roots of unity exp needs.
  EXPECT_EQ(kFieldQ, (uint64_t{1} << 31) - 1);
  EXPECT_EQ((kFieldP - 1) % kFieldQ, 0u);
  EXPECT_EQ(kFieldP >> 60, 1u);  // 61 bits
}

}  // namespace
}  // namespace tilevm::superopt
