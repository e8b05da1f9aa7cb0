// Random tile programs (issue 15's "correctness by construction"): GEMM-shaped programs with random tile
// shapes, thread counts, operand placements (shared or register), transposes, dtypes, pipeline depths,
// epilogues (straight to global, or through a shared tile; element-wise Parallel bodies on the accumulator,
// some with the loop variables as values: a band mask and index arithmetic)
// and problem sizes with partial tiles, lowered for sm_80 or sm_90a. Each must lower (verified after every
// pass), run on the interpreter without a race, give bit for bit the result of the same program with no
// pipeline, and match the product in doubles. A program whose Gemm no warp split tiles must be refused with
// that diagnostic, never crash.
//
// TILEVM_TILE_CASES overrides the number of programs (default 1000, about 30 s, each run twice on the
// interpreter; 200 under AddressSanitizer).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>

#include <fmt/format.h>

#include "interp_test_util.h"
#include "sanitized.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/transform/lower.h"
#include "tilevm/type/convert.h"

namespace tilevm::tile {
namespace {

struct Case {
  int threads = 128, bm = 64, bn = 64, bk = 32, stages = 2;
  bool a_shared = true, b_shared = true, transpose_a = false, transpose_b = false;
  bool bf16 = false, f16_acc = false, epilogue_shared = false, hopper = false, tma = false;
  bool ws = false;  // warp_specialize=True (with tma, whole warpgroups)
  // An element-wise epilogue (a Parallel loop): 0 none, 1 acc * S + T, 2 max(acc, T), 3 where(acc > T, acc,
  // acc * S), and with the loop variables as values (index values, on C's row r and column c): 4 a band mask
  // where(r + D >= c, acc, T), 5 acc + c * S - r % 3. Written straight to C, or back into acc (then copied)
  // when `into_acc`.
  int body = 0;
  bool into_acc = false;
  double scale = 1, shift = 0;
  int diagonal = 0;
  int64_t m = 1, n = 1, k = 1;

  // The epilogue applied to the product's value x at C[r, c].
  double apply(double x, int64_t r, int64_t c) const {
    switch (body) {
      case 1:
        return x * scale + shift;
      case 2:
        return std::max(x, shift);
      case 3:
        return x > shift ? x : x * scale;
      case 4:
        return r + diagonal >= c ? x : shift;
      case 5:
        return x + static_cast<double>(c) * scale - static_cast<double>(r % 3);
      default:
        return x;
    }
  }

  std::string describe() const {
    return fmt::format(
        "threads={} BM={} BN={} BK={} stages={}{} a={}{} b={}{} {} acc={} epilogue={} body={}{} target={} "
        "M,N,K={},{},{}",
        threads, bm, bn, bk, stages, tma ? (ws ? " tma ws" : " tma") : "", a_shared ? "shared" : "register",
        transpose_a ? "^T" : "", b_shared ? "shared" : "register", transpose_b ? "^T" : "",
        bf16 ? "bf16" : "f16", f16_acc ? "f16" : "f32", epilogue_shared ? "shared" : "direct", body,
        into_acc ? " into acc" : "", hopper ? "sm_90a" : "sm_80", m, n, k);
  }
};

Case random_case(std::mt19937& rng) {
  auto pick = [&](std::initializer_list<int> v) { return *(v.begin() + rng() % v.size()); };
  Case c;
  c.threads = pick({32, 64, 128, 256});
  c.bm = pick({16, 32, 64, 128});
  c.bn = pick({8, 16, 32, 64, 128});
  c.bk = pick({16, 32, 64});
  c.stages = pick({1, 2, 3, 4});
  c.a_shared = rng() % 4 != 0;
  c.b_shared = rng() % 4 != 0;
  c.transpose_a = rng() % 3 == 0;
  c.transpose_b = rng() % 2 == 0;
  c.bf16 = rng() % 3 == 0;
  c.f16_acc = !c.bf16 && rng() % 4 == 0;
  c.epilogue_shared = rng() % 3 == 0;
  c.body = rng() % 2 == 0 ? 0 : static_cast<int>(1 + rng() % 5);
  c.diagonal = static_cast<int>(rng() % 17) - 8;
  c.into_acc = rng() % 2 == 0;
  c.scale = pick({-3, -1, 1, 3}) * 0.5;
  c.shift = pick({-2, 0, 1}) * 0.25;
  c.hopper = rng() % 2 == 0;
  if (c.hopper && rng() % 2 == 0) {  // half of the sm_90a cases in the shapes wgmma takes
    c.threads = pick({128, 256});
    c.bm = c.threads == 256 ? 128 : pick({64, 128});
    c.bk = pick({16, 32, 64});
    c.a_shared = c.b_shared = true;
    c.transpose_a = false;
    c.transpose_b = true;
  }
  c.m = 1 + rng() % (2 * c.bm + 5);
  c.n = 1 + rng() % (2 * c.bn + 5);
  c.k = 1 + rng() % (3 * c.bk + 9);
  // The TMA where the global rows are 16-byte multiples (the tensor maps need it): K, and M or N where a
  // transposed operand's rows run along them.
  if (c.hopper && rng() % 2 == 0) {
    c.k = (c.k + 7) / 8 * 8;
    if (c.transpose_a) c.m = (c.m + 7) / 8 * 8;
    if (!c.transpose_b) c.n = (c.n + 7) / 8 * 8;
    c.tma = true;
    // Half of those warp-specialized where the threads are whole warpgroups (the consumers) and the loop
    // pipelines (stages >= 2), so that describe() says what the program has.
    c.ws = c.threads % 128 == 0 && rng() % 2 == 0 && c.stages >= 2;
  }
  return c;
}

// The program: C[M, N] = op(A) @ op(B), A stored [M, K] (or [K, M]), B [K, N] (or [N, K]).
std::string program_text(const Case& c) {
  const char* ab = c.bf16 ? "bf16" : "f16";
  const char* acc = c.f16_acc ? "f16" : "f32";
  std::string s = fmt::format("BM, BN, BK = {}, {}, {}\n\n", c.bm, c.bn, c.bk);
  s += fmt::format(
      "def g<ceil_div(M, BM), ceil_div(N, BN)>[threads={}]({}* a_ptr, {}* b_ptr, f32* c_ptr, i32 M, i32 N, "
      "i32 K):\n",
      c.threads, ab, ab);
  s += "    bm, bn = BlockIndices()\n";
  s += fmt::format("    a = ViewGlobal(a_ptr, dtype={}, shape=[{}])\n", ab, c.transpose_a ? "K, M" : "M, K");
  s += fmt::format("    b = ViewGlobal(b_ptr, dtype={}, shape=[{}])\n", ab, c.transpose_b ? "N, K" : "K, N");
  s += "    c = ViewGlobal(c_ptr, dtype=f32, shape=[M, N])\n";
  const std::string a_shape = c.transpose_a ? "[BK, BM]" : "[BM, BK]";
  const std::string b_shape = c.transpose_b ? "[BN, BK]" : "[BK, BN]";
  s += c.a_shared ? fmt::format("    ta = AllocateShared({}, shape={})\n", ab, a_shape)
                  : fmt::format("    ta = AllocateFragment({}, shape={})\n", ab, a_shape);
  s += c.b_shared ? fmt::format("    tb = AllocateShared({}, shape={})\n", ab, b_shape)
                  : fmt::format("    tb = AllocateFragment({}, shape={})\n", ab, b_shape);
  s += fmt::format("    acc = AllocateFragment({}, shape=[BM, BN])\n", acc);
  s += "    Fill(acc, 0.0)\n";
  s += fmt::format("    for k in Pipelined(ceil_div(K, BK), stages={}{}{}):\n", c.stages,
                   c.tma ? ", tma=True" : "",
                   // (the unpipelined reference of a case renders it with stages=1: no producer then)
                   c.ws && c.stages >= 2 ? ", warp_specialize=True" : "");
  s +=
      c.transpose_a ? "        Copy(a[k * BK:, bm * BM:], ta)\n" : "        Copy(a[bm * BM:, k * BK:], ta)\n";
  s +=
      c.transpose_b ? "        Copy(b[bn * BN:, k * BK:], tb)\n" : "        Copy(b[k * BK:, bn * BN:], tb)\n";
  s += fmt::format("        Gemm(ta, tb, acc{}{})\n", c.transpose_a ? ", transpose_a=True" : "",
                   c.transpose_b ? ", transpose_b=True" : "");
  const std::string value =
      c.body == 1   ? fmt::format("acc[i, j] * {} + {}", c.scale, c.shift)
      : c.body == 2 ? fmt::format("max(acc[i, j], {})", c.shift)
      : c.body == 3 ? fmt::format("where(acc[i, j] > {}, acc[i, j], acc[i, j] * {})", c.shift, c.scale)
      : c.body == 4
          ? fmt::format("where(bm * BM + i + {} >= bn * BN + j, acc[i, j], {})", c.diagonal, c.shift)
          : fmt::format("acc[i, j] + (bn * BN + j) * {} - (bm * BM + i) % 3", c.scale);
  if (c.body != 0 && !c.into_acc) {
    s += "    for i, j in Parallel(BM, BN):\n";
    s += fmt::format("        c[bm * BM + i, bn * BN + j] = {}\n", value);
    return s;
  }
  if (c.body != 0) {
    s += "    for i, j in Parallel(BM, BN):\n";
    s += fmt::format("        acc[i, j] = {}\n", value);
  }
  if (c.epilogue_shared) {
    s += "    sc = AllocateShared(f32, shape=[BM, BN])\n";
    s += "    Copy(acc, sc)\n";
    s += "    Copy(sc, c[bm * BM:, bn * BN:])\n";
  } else {
    s += "    Copy(acc, c[bm * BM:, bn * BN:])\n";
  }
  return s;
}

struct Outcome {
  bool lowered = false;
  std::string refused;     // the diagnostics when lowering failed
  std::vector<uint8_t> c;  // the result
  bool wgmma = false;      // the Gemm became a Dot on shared tiles or a DotAsync
  bool tma = false;        // the pipeline copies with CopyTma
  bool ws = false;         // ... from a producer warpgroup (the kernel split into regions)
};

Outcome run_case(const Case& c, int stages, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  Case d = c;
  d.stages = stages;
  const std::string text = program_text(d);
  Outcome out;
  Diagnostics diags;
  std::optional<ir::Program> p = ir::parse_program(text, diags);
  if (!p) {
    ADD_FAILURE() << "does not parse:\n" << diags.render("case.tile", text);
    return out;
  }
  transform::LowerOptions options;
  options.target = c.hopper ? target::Target::h100_sxm() : target::Target::generic_sm80();
  options.verify_each_pass = true;
  p = transform::lower(*std::move(p), diags, options);
  if (!p) {
    out.refused = diags.render("case.tile", text);
    return out;
  }
  out.lowered = true;
  struct FindWgmma : ir::IRVisitor {
    bool found = false;
    void visit_inst(const ir::Inst& inst) override {
      if (const auto* d = inst->as<ir::DotInst>()) found |= d->a.type().scope == ir::Scope::Shared;
      found |= inst->kind == ir::InstKind::DotAsync;
      tma |= inst->kind == ir::InstKind::CopyTma;
    }
    void visit_region(const ir::RegionStmt& r) override {
      ws = true;
      ir::IRVisitor::visit_region(r);
    }
    bool tma = false, ws = false;
  } find;
  find.visit_program(*p);
  out.wgmma = find.found;
  out.tma = find.tma;
  out.ws = find.ws;
  std::vector<uint8_t> abuf = a, bbuf = b;
  out.c.assign(static_cast<size_t>(c.m * c.n * 4), 0xff);  // NaN: an element never written shows
  interp::Arguments args;
  args.buffers = {{"a_ptr", &abuf}, {"b_ptr", &bbuf}, {"c_ptr", &out.c}};
  args.scalars = {{"M", interp::testing::int_arg(c.m)},
                  {"N", interp::testing::int_arg(c.n)},
                  {"K", interp::testing::int_arg(c.k)}};
  if (!interp::run_program(*p, args, diags)) {
    ADD_FAILURE() << "does not run:\n" << diags.render("case.tile", text) << "\n" << text;
    out.lowered = false;
  }
  return out;
}

int case_count() {
  if (const char* n = std::getenv("TILEVM_TILE_CASES"); n && *n) return std::max(1, std::atoi(n));
  return test::under_asan(120, 1000);
}

TEST(TileRandomPrograms, PipelinedEqualsUnpipelinedAndTheProduct) {
  std::mt19937 rng(20261126);
  const int cases = case_count();
  int lowered = 0, refused = 0, wgmma = 0, tma = 0, ws = 0, bodies = 0;
  for (int i = 0; i < cases; ++i) {
    const Case c = random_case(rng);
    SCOPED_TRACE(fmt::format("case {}: {}", i, c.describe()));
    const DataType ab = c.bf16 ? DataType::bf16() : DataType::f16();
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<double> av(static_cast<size_t>(c.m * c.k)), bv(static_cast<size_t>(c.k * c.n));
    for (double& v : av) v = decode(ab, encode(ab, dist(rng)));
    for (double& v : bv) v = decode(ab, encode(ab, dist(rng)));
    // av is A[m, k] row-major, bv is B[k, n]; stored transposed where the case says.
    std::vector<double> as(av.size()), bs(bv.size());
    for (int64_t m = 0; m < c.m; ++m)
      for (int64_t k = 0; k < c.k; ++k)
        as[static_cast<size_t>(c.transpose_a ? k * c.m + m : m * c.k + k)] =
            av[static_cast<size_t>(m * c.k + k)];
    for (int64_t k = 0; k < c.k; ++k)
      for (int64_t n = 0; n < c.n; ++n)
        bs[static_cast<size_t>(c.transpose_b ? n * c.k + k : k * c.n + n)] =
            bv[static_cast<size_t>(k * c.n + n)];
    const std::vector<uint8_t> a = interp::testing::pack_values(ab, as),
                               b = interp::testing::pack_values(ab, bs);

    const Outcome piped = run_case(c, c.stages, a, b);
    if (!piped.lowered) {
      if (piped.refused.empty()) return;  // a failure was added
      // The one refusal a well-formed case may meet: no warp split tiles the accumulator.
      EXPECT_NE(piped.refused.find("no split of"), std::string::npos) << piped.refused << "\n"
                                                                      << program_text(c);
      ++refused;
      continue;
    }
    ++lowered;
    bodies += c.body != 0;
    wgmma += piped.wgmma;
    tma += piped.tma;
    ws += piped.ws;
    const Outcome plain = run_case(c, 1, a, b);
    ASSERT_TRUE(plain.lowered) << plain.refused;
    // The same Dots in the same order: the pipeline moves data, never the arithmetic.
    ASSERT_EQ(piped.c, plain.c) << program_text(c);
    const std::vector<double> got = interp::testing::unpack_values(DataType::f32(), piped.c, c.m * c.n);
    // Each K step rounds into the accumulator (f32, or f16: 2^-11 relative per step).
    const double steps = static_cast<double>((c.k + c.bk - 1) / c.bk);
    const double rel = c.f16_acc ? std::ldexp(1.0, -10) * steps : 1e-6 * steps;
    for (int64_t m = 0; m < c.m; ++m)
      for (int64_t n = 0; n < c.n; ++n) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < c.k; ++k) {
          const double p = av[static_cast<size_t>(m * c.k + k)] * bv[static_cast<size_t>(k * c.n + n)];
          ref += p;
          mag += std::fabs(p);
        }
        const double v = got[static_cast<size_t>(m * c.n + n)];
        // The epilogue scales the product's error by at most |S| and rounds once or twice more (f16 where
        // the accumulator is); where(acc > T) may take either branch for a product within the error of T.
        const double err = rel * mag + 1e-6, want = c.apply(ref, m, n);
        if (c.body == 3 && std::fabs(ref - c.shift) <= err) continue;
        const double tol =
            err * std::max(1.0, std::fabs(c.scale)) +
            (c.f16_acc ? std::ldexp(1.0, -10) : 1e-6) *
                (std::fabs(want) + std::fabs(c.shift) + (c.body == 5 ? std::fabs(want - ref) : 0));
        ASSERT_LE(std::fabs(v - want), tol) << "C[" << m << ", " << n << "] = " << v << ", the product is "
                                            << ref << " and the epilogue gives " << want << "\n"
                                            << program_text(c);
      }
  }
  std::cout << cases << " programs: " << lowered << " lowered (" << wgmma << " on wgmma, " << tma
            << " with TMA, " << ws << " of those warp-specialized, " << bodies
            << " with element-wise epilogues), " << refused << " refused (no warp split)\n";
  // The generator is worth its time only if most cases lower, and the wgmma form is among them.
  EXPECT_GT(lowered, cases / 2) << refused << " refused";
  EXPECT_GT(wgmma, 0);
  EXPECT_GT(tma, 0);
  EXPECT_GT(ws, 0);
  EXPECT_GT(bodies, 0);
}

}  // namespace
}  // namespace tilevm::tile
