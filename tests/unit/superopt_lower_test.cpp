// Lowering kernel graphs to tile programs and checking them numerically on the interpreter: graph-defined
// kernels (the fused RMSNorm + Linear, the graphs the search finds), the op-by-op kernels of tensor programs,
// and the refusals.
#include <algorithm>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "superopt_test_util.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/runtime/cublas.h"
#include "tilevm/superopt/fuse.h"
#include "tilevm/superopt/lower_tile.h"
#include "tilevm/superopt/run_tile.h"
#include "tilevm/superopt/search.h"
#include "tilevm/superopt/verify.h"
#include "tilevm/support/error.h"

namespace tilevm::superopt {
namespace {

// tests/superopt/rmsnorm_linear_fused.graph at sizes the tensor cores take (as in tests/golden/superopt/):
// blocks of [16, 16] x [16, 32].
constexpr const char* kFusedRmsNormLinear = R"(kernel rmsnorm_linear_fused {
  input X [32, 64]
  input W [64, 64]
  (Y) = block(X, W) grid=[2, 2] loop=4 {
    x = iter(X) imap=[0, -, -] fmap=1
    w = iter(W) imap=[-, 1] fmap=0
    xw = matmul(x, w)
    (sq) = thread(x) {
      input a [16, 16]
      s = square(a)
      output s
    }
    ss = sum(sq) dim=1
    acc_xw = accum(xw) fmap=-
    acc_ss = accum(ss) fmap=-
    inv_n = const(1/64) shape=[1, 1]
    eps = const(1e-6) shape=[1, 1]
    m = mul(acc_ss, inv_n)
    v = add(m, eps)
    r = sqrt(v)
    y = div(acc_xw, r)
    Ys = save(y) omap=[0, 1, -]
  }
  output Y
}
)";

constexpr const char* kRmsNormLinear = R"(kernel rmsnorm_linear {
  input X [32, 64]
  input W [64, 64]
  n = rms_norm(X) eps=1e-6
  Y = matmul(n, W)
  output Y
}
)";

void expect_checked(const Graph& program, const Graph& candidate, const TileLowerOptions& options = {}) {
  const LoweredGraph lowered = lower_to_tile(candidate, options);
  const NumericCheck c = check_numerically(program, lowered, {.seed = 5});
  EXPECT_TRUE(c.passed) << c.detail << " (error " << c.max_error << ")\n" << lowered.kernels[0].source;
}

TEST(SuperoptLower, FusedRmsNormLinearIsOneKernel) {
  const Graph fused = parse_graph(kFusedRmsNormLinear);
  const LoweredGraph lowered = lower_to_tile(fused);
  ASSERT_EQ(lowered.kernels.size(), 1u);
  EXPECT_EQ(lowered.kernels[0].buffers, (std::vector<std::string>{"X", "W", "Y"}));
  expect_checked(parse_graph(kRmsNormLinear), fused);
}

TEST(SuperoptLower, OpByOpKernels) {
  // rms_norm, then matmul: two kernels and a temporary between them.
  const Graph program = parse_graph(kRmsNormLinear);
  const LoweredGraph lowered = lower_to_tile(program, {.tile_m = 16, .tile_n = 32, .tile_k = 16});
  ASSERT_EQ(lowered.kernels.size(), 2u);
  EXPECT_EQ(lowered.buffer("n").role, LoweredBuffer::Role::Temp);
  expect_checked(program, program, {.tile_m = 16, .tile_n = 32, .tile_k = 16});
  // A gated MLP: three matmuls, silu and a product; and a row softmax (a sum and a broadcast division).
  const Graph mlp = parse_graph(R"(kernel gated_mlp {
  input X [16, 32]
  input W1 [32, 32]
  input W3 [32, 32]
  input W2 [32, 16]
  G = matmul(X, W1)
  U = matmul(X, W3)
  A = silu(G)
  H = mul(A, U)
  Y = matmul(H, W2)
  output Y
}
)");
  expect_checked(mlp, mlp);
  const Graph softmax = parse_graph(
      "kernel softmax {\n  input X [8, 64]\n  E = exp(X)\n  Z = sum(E) dim=1\n  Y = div(E, Z)\n  output "
      "Y\n}\n");
  expect_checked(softmax, softmax, {.row_elements = 128});
}

TEST(SuperoptLower, WrongKernelsFailTheCheck) {
  // The kernels of one program checked against another: silu for relu.
  const Graph silu = parse_graph("kernel f {\n  input X [16, 16]\n  Y = silu(X)\n  output Y\n}\n");
  const Graph relu = parse_graph("kernel f {\n  input X [16, 16]\n  Y = relu(X)\n  output Y\n}\n");
  EXPECT_FALSE(check_numerically(relu, lower_to_tile(silu)).passed);
  EXPECT_TRUE(check_numerically(relu, lower_to_tile(relu)).passed);
  // A fused kernel whose save writes every block's part at block 0's place: on a GPU it leaves NaN behind and
  // the blocks race for block 0's place; the interpreter reports the race (the search counts the candidate
  // as one that did not run).
  LoweredGraph lowered = lower_to_tile(parse_graph(kFusedRmsNormLinear));
  std::string& source = lowered.kernels[0].source;
  const size_t at = source.find("g_Y[b0 * 16 + i0");
  ASSERT_NE(at, std::string::npos) << source;
  source.replace(at, 16, "g_Y[0 * 16 + i0");
  try {
    check_numerically(parse_graph(kRmsNormLinear), lowered);
    ADD_FAILURE() << "the racing kernel ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "block [1] writes global 'p_Y' element at offset 0, which block [0] wrote"),
              std::string::npos)
        << e.what();
  }
}

TEST(SuperoptLower, ThreadOutputsOfTwoShapesAndAConstantOutput) {
  // A thread op whose outputs differ in shape: e = exp(s) over the row sums [16, 1], d = x / s over [16, 32];
  // and a constant among the outputs (filled on the host, no kernel writes it).
  const Graph program = parse_graph(R"(kernel f {
  input X [16, 32]
  S = sum(X) dim=1
  E = exp(S)
  D = div(X, S)
  C = const(0.5) shape=[16, 32]
  output E, D, C
}
)");
  const Graph fused = parse_graph(R"(kernel f {
  input X [16, 32]
  (E, D) = block(X) grid=[1, 1, 1] loop=1 {
    xi = iter(X) imap=[-, -, -] fmap=-
    x = accum(xi) fmap=-
    s = sum(x) dim=1
    (e, d) = thread(s, x) {
      input a [16, 1]
      input b [16, 32]
      ea = exp(a)
      db = div(b, a)
      output ea, db
    }
    Es = save(e) omap=[-, -, -]
    Ds = save(d) omap=[-, -, -]
  }
  C = const(0.5) shape=[16, 32]
  output E, D, C
}
)");
  expect_checked(program, fused);
  EXPECT_EQ(lower_to_tile(fused).buffer("C").role, LoweredBuffer::Role::Const);
}

// Attention over two heads (rank 3: [heads, rows, columns]): op by op, one block per head; and fused, the
// tokens in 2 chunks per head with the division after the loop (tests/superopt/attention_fused.graph with
// a head dimension). The kernels view [H, B, C] tensors as [H * B, C].
constexpr const char* kHeads = R"(kernel heads {
  input Q [2, 16, 16]
  input K [2, 16, 32]
  input V [2, 32, 16]
  S = matmul(Q, K)
  c = const(1/4) shape=[1, 1, 1]
  T = mul(S, c)
  E = exp(T)
  Z = sum(E) dim=2
  P = div(E, Z)
  O = matmul(P, V)
  output O
}
)";

TEST(SuperoptLower, AttentionOverHeads) {
  const Graph program = parse_graph(kHeads);
  expect_checked(program, program, {.tile_k = 16});
  // Each head's ops split further: the matmuls into [16, 16] tiles (grid y and z), the element-wise ops and
  // the sum into blocks of 2 rows (rows of 32 for the sum, which keeps dimension 1).
  expect_checked(program, program, {.tile_m = 16, .tile_n = 16, .tile_k = 16, .row_elements = 64});
  // The op-by-op S = matmul(Q, K) is a batch of 2 products [16, 16] x [16, 32] for cuBLAS.
  EXPECT_EQ(lower_to_tile(program).kernels[0].matmul, (std::array<int64_t, 4>{16, 32, 16, 2}));
  const Graph fused = parse_graph(R"(kernel heads_fused {
  input Q [2, 16, 16]
  input K [2, 16, 32]
  input V [2, 32, 16]
  (O) = block(Q, K, V) grid=[2, 1, 1] loop=2 {
    q = iter(Q) imap=[0, -, -] fmap=-
    k = iter(K) imap=[0, -, -] fmap=2
    v = iter(V) imap=[0, -, -] fmap=1
    s = matmul(q, k)
    c = const(1/4) shape=[1, 1, 1]
    (e) = thread(s, c) {
      input a [1, 16, 16]
      input b [1, 1, 1]
      t = mul(a, b)
      u = exp(t)
      output u
    }
    z = sum(e) dim=2
    ev = matmul(e, v)
    acc_ev = accum(ev) fmap=-
    acc_z = accum(z) fmap=-
    o = div(acc_ev, acc_z)
    Os = save(o) omap=[0, -, -]
  }
  output O
}
)");
  expect_checked(program, fused);
  // A wrong head offset (every block writing head 0) is caught.
  LoweredGraph lowered = lower_to_tile(fused);
  std::string& source = lowered.kernels[0].source;
  const size_t at = source.find("(b0 * 1) * 16");
  ASSERT_NE(at, std::string::npos) << source;
  source.replace(at, 13, "0");
  EXPECT_FALSE(check_numerically(program, lowered).passed);
}

// The algorithms of the benchmarks at interpreter sizes (tests/superopt/): decode attention split over the
// cached tokens into two kernels, LoRA's gathered adapter, QK-norm's norms moved past the product. Each
// graph must verify against its program and compute it on the interpreter; a wrong split fails both.
TEST(SuperoptLower, TheBenchmarkAlgorithmsAtSmallSizes) {
  for (const char* name : {"gqa_decode", "lora", "qknorm_attention"}) {
    SCOPED_TRACE(name);
    const Graph program = testing::test_graph(std::string(name) + ".graph");
    const Graph fused = testing::test_graph(std::string(name) + "_fused.graph");
    EXPECT_EQ(verify_equivalent(program, fused, {.trials = 2}).verdict, Verdict::Equivalent);
    expect_checked(program, fused);
  }
  // The decode attention's combining kernel multiplying by the sums of exp instead of dividing.
  std::string text = testing::read_test_file("gqa_decode_fused.graph");
  const size_t at = text.find("o = div(an, az)");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 15, "o = mul(an, az)");
  const Graph program = testing::test_graph("gqa_decode.graph");
  const Graph wrong = parse_graph(text);
  EXPECT_EQ(verify_equivalent(program, wrong, {.trials = 2}).verdict, Verdict::NotEquivalent);
  EXPECT_FALSE(check_numerically(program, lower_to_tile(wrong)).passed);
}

// Lowering choices that make the kernels faster without changing what they compute: an operand the loop does
// not partition is copied once before the loop, and a loop over small tiles is pipelined deeper.
TEST(SuperoptLower, InvariantOperandsAndSmallTiles) {
  const LoweredGraph lowered = lower_to_tile(testing::test_graph("gqa_decode_fused.graph"), {.stages = 2});
  ASSERT_EQ(lowered.kernels.size(), 2u);
  const std::string& partials = lowered.kernels[0].source;
  const size_t loop = partials.find("for it in Pipelined(2, stages=2)");
  ASSERT_NE(loop, std::string::npos) << partials;  // 2 KiB per iteration, but only 2 iterations
  const size_t q = partials.find("Copy(g_Qt[");
  ASSERT_NE(q, std::string::npos);
  EXPECT_LT(q, loop) << "Q^T is the same tile in every iteration";
  EXPECT_GT(partials.find("Copy(g_K["), loop);
  // The combining loop copies [8, 8] and [1, 8] tiles (144 bytes): as deep as its 4 iterations allow.
  EXPECT_NE(lowered.kernels[1].source.find("for it in Pipelined(4, stages=4)"), std::string::npos)
      << lowered.kernels[1].source;
  // A loop of the same length over 24 KiB per iteration ([64, 64] and [64, 128] f16 tiles) keeps the depth
  // asked for.
  const Graph mm = parse_graph(R"(kernel mm {
  input A [64, 256]
  input B [256, 128]
  (C) = block(A, B) grid=[1, 1, 1] loop=4 {
    a = iter(A) imap=[-, -, -] fmap=1
    b = iter(B) imap=[-, -, -] fmap=0
    p = matmul(a, b)
    c = accum(p) fmap=-
    Cs = save(c) omap=[-, -, -]
  }
  output C
}
)");
  const std::string big = lower_to_tile(mm, {.stages = 2}).kernels[0].source;
  EXPECT_NE(big.find("for it in Pipelined(4, stages=2)"), std::string::npos) << big;
}

// What is computed from unpartitioned operands and constants alone is computed once, before the loop: the
// QK-norm attention's query norms (square, sum, and the shared copy the scores' loop reads), not its key
// norms, which change with every tile of K.
TEST(SuperoptLower, FixedOpsBeforeTheLoop) {
  const Graph program = testing::test_graph("qknorm_attention.graph");
  const Graph fused = testing::test_graph("qknorm_attention_fused.graph");
  const LoweredGraph lowered = lower_to_tile(fused, {.stages = 2});
  const std::string& partials = lowered.kernels[0].source;
  const size_t loop = partials.find("for it in Pipelined(");
  ASSERT_NE(loop, std::string::npos) << partials;
  for (const char* before : {"v_q2[i0, i1] = ", "ReduceSum(v_q2, ", "v_qs_s[i0, 0] = v_qs[i0]"}) {
    SCOPED_TRACE(before);
    EXPECT_LT(partials.find(before), loop) << partials;
  }
  for (const char* in : {"v_k2[i0, i1] = ", "ReduceSum(v_k2, ", "Gemm(v_q, v_k, v_s)", "v_acc_z[i0] = "}) {
    SCOPED_TRACE(in);
    const size_t at = partials.find(in);
    EXPECT_NE(at, std::string::npos) << partials;
    EXPECT_GT(at, loop) << partials;
  }
  expect_checked(program, fused, {.stages = 2});
  // A fixed matmul, its f16 copy for the loop's matmul, and a softmax-style sum of it: all before the loop.
  const Graph abc = parse_graph(R"(kernel abc {
  input A [32, 32]
  input B [32, 32]
  input C [32, 64]
  D = matmul(A, B)
  Y = matmul(D, C)
  E = exp(D)
  Z = sum(E) dim=1
  W = mul(Y, Z)
  output W
}
)");
  const Graph abc_fused = parse_graph(R"(kernel abc_fused {
  input A [32, 32]
  input B [32, 32]
  input C [32, 64]
  (W) = block(A, B, C) grid=[1, 1, 1] loop=2 {
    a = iter(A) imap=[-, -, -] fmap=-
    b = iter(B) imap=[-, -, -] fmap=-
    c = iter(C) imap=[-, -, -] fmap=1
    d = matmul(a, b)
    y = matmul(d, c)
    e = exp(d)
    z = sum(e) dim=1
    w = mul(y, z)
    acc = accum(w) fmap=1
    Ws = save(acc) omap=[-, -, -]
  }
  output W
}
)");
  const std::string k = lower_to_tile(abc_fused, {.stages = 2}).kernels[0].source;
  const size_t abc_loop = k.find("for it in Pipelined(2, stages=2)");
  ASSERT_NE(abc_loop, std::string::npos) << k;
  for (const char* before : {"Gemm(v_a, v_b, v_d)", "v_d_h[i0, i1] = v_d[i0, i1]", "ReduceSum(v_e, "})
    EXPECT_LT(k.find(before), abc_loop) << before << "\n" << k;
  EXPECT_GT(k.find("Gemm(v_d_h, v_c, v_y)"), abc_loop) << k;
  expect_checked(abc, abc_fused, {.stages = 2});
}

TEST(SuperoptLower, TheSearchsGraphsRunCorrectly) {
  // Every graph the search finds for a matmul on 2 x 2 blocks over 2 iterations, fused, lowered and
  // checked.
  const Graph program =
      parse_graph("kernel mm {\n  input A [32, 64]\n  input B [64, 64]\n  C = matmul(A, B)\n  output C\n}\n");
  BlockSchedule schedule{.grid = {2, 2, 1},
                         .loop = 2,
                         .imaps = {{0, kReplica, kReplica}, {kReplica, 1, kReplica}},
                         .fmaps = {1, 0},
                         .omap = {0, 1, kReplica}};
  SearchResult r =
      search_block_graphs(program, schedule, {.max_ops = 3, .ops = {OpKind::Matmul, OpKind::Add}});
  ASSERT_GE(r.found.size(), 2u);
  for (const Graph& g : r.found) expect_checked(program, fuse_elementwise(g));
}

// A third grid dimension (ScheduleSpace::grid_z_extents): a batched matmul split over its batch, rows and
// columns at once. Without it no schedule has a z extent; with it the search verifies graphs on 2 x 2 x 2
// blocks, each of which partitions some input along z, and they lower and compute the product.
TEST(SuperoptLower, ThreeDimensionalGrids) {
  const Graph program = testing::test_graph("batched_matmul.graph");
  ScheduleSpace space{.grid_extents = {1, 2}, .loop_extents = {1}};
  for (const BlockSchedule& s : enumerate_schedules(program, space)) EXPECT_EQ(s.grid[2], 1);
  space.grid_z_extents = {1, 2};
  int with_z = 0;
  for (const BlockSchedule& s : enumerate_schedules(program, space)) {
    if (s.grid[2] == 1) continue;
    ++with_z;
    EXPECT_EQ(s.grid, (std::array<int64_t, 3>{2, 2, 2}));
    EXPECT_TRUE(
        std::any_of(s.imaps.begin(), s.imaps.end(), [](const DimMap& m) { return m[2] != kReplica; }));
  }
  EXPECT_GT(with_z, 0);
  const SearchResult r =
      search_schedules(program, space, {.max_ops = 2, .ops = {OpKind::Matmul, OpKind::Add}}, 1);
  int checked = 0;
  for (const Graph& g : r.found) {
    const Op& block =
        *std::find_if(g.ops().begin(), g.ops().end(), [](const Op& op) { return op.kind == OpKind::Block; });
    if (g.children()[static_cast<size_t>(block.child)].grid()[2] == 1) continue;
    expect_checked(program, fuse_elementwise(g));
    if (++checked == 1) break;  // a check runs the kernels on the interpreter: one is enough here
  }
  EXPECT_GT(checked, 0) << r.found.size() << " graphs found";
}

// A matmul over K = 1 is a product of broadcasts (c[m, n] = a[m, 0] * b[0, n]), which the search makes at
// full sizes (a row statistic scaled by a [1, 1] constant: [16, 1] x [1, 1]); Gemm does not take an extent
// of 1, so it lowers as an element-wise multiply: here a column scaled by a constant, and an outer product.
TEST(SuperoptLower, MatmulsOverOneElementAreProducts) {
  const Graph program = parse_graph(R"(kernel outer {
  input X [16, 32]
  input U [1, 32]
  S = sum(X) dim=1
  c = const(1/32) shape=[1, 1]
  M = matmul(S, c)
  Y = matmul(M, U)
  output Y
}
)");
  const Graph fused = parse_graph(R"(kernel outer {
  input X [16, 32]
  input U [1, 32]
  (Y) = block(X, U) grid=[1, 1, 1] loop=1 {
    xi = iter(X) imap=[-, -, -] fmap=-
    ui = iter(U) imap=[-, -, -] fmap=-
    x = accum(xi) fmap=-
    u = accum(ui) fmap=-
    s = sum(x) dim=1
    c = const(1/32) shape=[1, 1]
    m = matmul(s, c)
    y = matmul(m, u)
    Ys = save(y) omap=[-, -, -]
  }
  output Y
}
)");
  EXPECT_EQ(verify_equivalent(program, fused, {.seed = 3}).verdict, Verdict::Equivalent);
  expect_checked(program, fused);
  expect_checked(program, program);  // op by op
}

// GELU (the erf form) lowers to the tile layer's erf: op by op, and as the thread graph of a fused Linear +
// GELU, both checked against the program on doubles.
TEST(SuperoptLower, GeluLowersToErf) {
  const Graph program = parse_graph(R"(kernel linear_gelu {
  input X [32, 64]
  input W [64, 32]
  M = matmul(X, W)
  Y = gelu(M)
  output Y
}
)");
  expect_checked(program, program);
  const Graph fused = parse_graph(R"(kernel linear_gelu_fused {
  input X [32, 64]
  input W [64, 32]
  (Y) = block(X, W) grid=[2, 2] loop=4 {
    x = iter(X) imap=[0, -, -] fmap=1
    w = iter(W) imap=[-, 1] fmap=0
    xw = matmul(x, w)
    acc = accum(xw) fmap=-
    (g) = thread(acc) {
      input a [16, 16]
      e = gelu(a)
      output e
    }
    Ys = save(g) omap=[0, 1, -]
  }
  output Y
}
)");
  EXPECT_EQ(verify_equivalent(program, fused, {.seed = 4}).verdict, Verdict::Equivalent);
  expect_checked(program, fused);
}

TEST(SuperoptLower, Refusals) {
  auto message = [](const std::string& text) {
    try {
      lower_to_tile(parse_graph(text));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(
      message("kernel f {\n  input X [2, 2, 16, 16]\n  Y = exp(X)\n  output Y\n}\n"),
      "cannot lower exp 'Y' to a tile program: it is [2, 2, 16, 16]; the lowering handles rank 2 and 3");
  EXPECT_EQ(message("kernel f {\n  input X [2, 16, 16]\n  Y = concat(X, X) dim=0\n  output Y\n}\n"),
            "cannot lower concat 'Y' to a tile program: a concat over the leading dimension of a rank-3 "
            "tensor is not lowered yet");
}

// concat, op by op (blocks of whole rows of the kept dimension, each operand written into its part) and in a
// graph-defined kernel (the concatenation of two tiles feeding a Gemm: [X1 X2] @ W as one product).
TEST(SuperoptLower, Concat) {
  // concat(A, B) dim=DIM of inputs of shapes SA and SB, and exp of it where `exp`.
  auto concat = [](const std::string& sa, const std::string& sb, int dim, bool exp) {
    return parse_graph(
        fmt::format("kernel f {{\n  input A {}\n  input B {}\n  C = concat(A, B) dim={}\n{}  output {}\n}}\n",
                    sa, sb, dim, exp ? "  D = exp(C)\n" : "", exp ? "D" : "C"));
  };
  const Graph rows = concat("[16, 32]", "[16, 96]", 1, true);
  expect_checked(rows, rows);
  const Graph columns = concat("[8, 32]", "[24, 32]", 0, false);
  expect_checked(columns, columns);
  const Graph slices = concat("[2, 16, 16]", "[2, 16, 48]", 2, false);
  expect_checked(slices, slices);
  // Rows of 96 (12 runs of 8 f16, which 128 threads do not spread over): the block takes 64 threads.
  const Graph wide = concat("[16, 32]", "[16, 64]", 1, true);
  expect_checked(wide, wide);
  EXPECT_NE(lower_to_tile(wide).kernels[1].source.find("[threads=64]"), std::string::npos)
      << lower_to_tile(wide).kernels[1].source;
  const Graph program = parse_graph(R"(kernel p {
  input X1 [32, 16]
  input X2 [32, 16]
  input W [32, 32]
  X = concat(X1, X2) dim=1
  Y = matmul(X, W)
  output Y
}
)");
  const Graph fused = parse_graph(R"(kernel p_fused {
  input X1 [32, 16]
  input X2 [32, 16]
  input W [32, 32]
  (Y) = block(X1, X2, W) grid=[2, 1] loop=1 {
    x1 = iter(X1) imap=[0, -, -] fmap=-
    x2 = iter(X2) imap=[0, -, -] fmap=-
    w = iter(W) imap=[-, -, -] fmap=-
    x = concat(x1, x2) dim=1
    y = matmul(x, w)
    acc = accum(y) fmap=-
    Ys = save(acc) omap=[0, -, -]
  }
  output Y
}
)");
  ASSERT_EQ(lower_to_tile(fused).kernels.size(), 1u);
  expect_checked(program, fused);
  expect_checked(program, program, {.tile_m = 16, .tile_n = 32, .tile_k = 16});
}

// The same kernels on the device (lowered for it: on sm_90a the Gemms may take wgmma), checked against the
// programs.
TEST(SuperoptLowerGpu, KernelsOnTheDevice) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  const Graph program = parse_graph(kRmsNormLinear);
  for (const Graph& g : {parse_graph(kFusedRmsNormLinear), program}) {
    const LoweredGraph lowered = lower_to_tile(g, {.tile_m = 16, .tile_n = 32, .tile_k = 16});
    const NumericCheck c = check_numerically(program, lowered, {.gpu = true, .seed = 9});
    EXPECT_TRUE(c.passed) << g.name() << ": " << c.detail << " (error " << c.max_error << ")";
  }
  EXPECT_GT(time_on_gpu(lower_to_tile(program), 5), 0.0);
  std::vector<double> each;
  EXPECT_GT(time_on_gpu(lower_to_tile(program), 5, false, &each), 0.0);
  ASSERT_EQ(each.size(), lower_to_tile(program).kernels.size());
  for (double us : each) EXPECT_GT(us, 0.0);
  // The op-by-op matmul as a cuBLAS GEMM (the baseline of tilevm superopt).
  if (runtime::Cublas::available()) {
    EXPECT_GT(time_on_gpu(lower_to_tile(program), 5, true), 0.0);
  }
  EXPECT_EQ(lower_to_tile(program).kernels[1].matmul, (std::array<int64_t, 4>{32, 64, 64, 1}));
}

}  // namespace
}  // namespace tilevm::superopt
