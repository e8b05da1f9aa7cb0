// The tile layer's Parallel loops and fragment reductions (examples/tile/softmax.tile, rms_norm.tile,
// gemm_bias_relu.tile) on the interpreter, against double references on fresh random inputs with poisoned
// outputs; and the text form of a Parallel loop, which prints back as it parses.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "example_util.h"
#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/printer.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/layout/tiled_storage.h"
#include "tilevm/runtime/nvrtc.h"

namespace tilevm::tile {
namespace {

using example_test::expect_f16_near;
using example_test::poisoned;
using example_test::random_f16;

// A dequantize-GEMM example with its weight type u4 replaced by `wtype` everywhere.
std::string with_weight_type(std::string source, const std::string& wtype) {
  for (size_t at = source.find("u4"); at != std::string::npos; at = source.find("u4", at + wtype.size()))
    source.replace(at, 2, wtype);
  return source;
}

// `source` parsed and lowered (verified after every pass); a test failure with the diagnostics if not.
std::optional<ir::Program> lowered_text(const std::string& source, const std::string& name,
                                        const std::map<std::string, std::string>& defines = {},
                                        const target::Target& target = target::Target::generic_sm80()) {
  Diagnostics diags;
  ir::ParseOptions options;
  options.defines = defines;
  std::optional<ir::Program> p = ir::parse_program(source, diags, options);
  if (p) p = transform::lower(*std::move(p), diags, {.target = target, .verify_each_pass = true});
  if (!p) ADD_FAILURE() << diags.render(name, source);
  return p;
}

std::optional<ir::Program> lowered(const std::string& name, const std::map<std::string, std::string>& defines,
                                   const target::Target& target = target::Target::generic_sm80()) {
  return lowered_text(example_test::read_text(example_test::example_path(name)), name, defines, target);
}

// Runs examples/NAME with these defines on the interpreter (lowered for sm_80) or on the GPU (lowered for
// the device by exec::run_on_gpu).
bool run(const std::string& name, const std::map<std::string, std::string>& defines, bool gpu,
         const std::map<std::string, std::vector<uint8_t>*>& buffers,
         const std::map<std::string, int64_t>& scalars) {
  interp::Arguments args;
  args.buffers = buffers;
  for (const auto& [k, v] : scalars) args.scalars[k] = interp::ScalarValue{false, v, 0.0};
  Diagnostics diags;
  bool ok = false;
  if (gpu) {
    const std::string source = example_test::read_text(example_test::example_path(name));
    ir::ParseOptions options;
    options.defines = defines;
    std::optional<ir::Program> p = ir::parse_program(source, diags, options);
    ok = p && exec::run_on_gpu(*p, args, diags);
  } else {
    std::optional<ir::Program> p = lowered(name, defines);
    ok = p && interp::run_program(*p, args, diags);
  }
  if (!ok) ADD_FAILURE() << diags.render(name, "");
  return ok;
}

// Rows of n elements in tiles N wide (n <= N: the columns past n are masked).
void expect_softmax(int64_t m, int64_t n, int64_t tile_n, bool gpu) {
  example_test::F16Matrix x = random_f16(m * n, 11);
  std::vector<uint8_t> y = poisoned(m * n * 2);
  ASSERT_TRUE(run("tile/softmax.tile", {{"N", std::to_string(tile_n)}}, gpu,
                  {{"x_ptr", &x.bytes}, {"y_ptr", &y}}, {{"M", m}, {"n", n}}));
  std::vector<double> want(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < m; ++r) {
    const double* row = &x.values[static_cast<size_t>(r * n)];
    const double mx = *std::max_element(row, row + n);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(row[j] - mx);
    for (int64_t j = 0; j < n; ++j) want[static_cast<size_t>(r * n + j)] = std::exp(row[j] - mx) / sum;
  }
  expect_f16_near(y, want, n, 1e-6);  // the values are about 1 / n: f16's relative precision decides
}

void expect_rms_norm(int64_t m, int64_t n, int64_t tile_n, bool gpu) {
  example_test::F16Matrix x = random_f16(m * n, 12), w = random_f16(n, 13);
  std::vector<uint8_t> y = poisoned(m * n * 2);
  ASSERT_TRUE(run("tile/rms_norm.tile", {{"N", std::to_string(tile_n)}}, gpu,
                  {{"x_ptr", &x.bytes}, {"w_ptr", &w.bytes}, {"y_ptr", &y}}, {{"M", m}, {"n", n}}));
  std::vector<double> want(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < m; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < n; ++j)
      ss += x.values[static_cast<size_t>(r * n + j)] * x.values[static_cast<size_t>(r * n + j)];
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(n) + 1e-6);
    for (int64_t j = 0; j < n; ++j)
      want[static_cast<size_t>(r * n + j)] =
          x.values[static_cast<size_t>(r * n + j)] * scale * w.values[static_cast<size_t>(j)];
  }
  expect_f16_near(y, want, n, 1e-5);
}

TEST(TileParallel, SoftmaxOnTheInterpreter) {
  expect_softmax(7, 64, 64, false);  // 7 rows: the second block's last row is outside x
}

// Rows shorter than the tile: without the mask the zeros read past a row's end would count in its maximum
// and sum (every row's values are random, some rows all negative).
TEST(TileParallel, SoftmaxOfShortRowsOnTheInterpreter) {
  expect_softmax(5, 50, 64, false);
  expect_softmax(3, 1, 64, false);
}

TEST(TileParallel, RmsNormOnTheInterpreter) {
  expect_rms_norm(6, 128, 128, false);
  expect_rms_norm(5, 100, 128, false);  // the mean divides by n, not by the tile width
}

// The fused epilogues on both Gemm forms: mma.sync fragments (sm_80) and the wgmma accumulator (sm_90a), of
// gemm_bias_relu.tile and gemm_bias_gelu.tile (`act` the activation on doubles). gpu: on the device (the
// target is the device's); else on the interpreter for `target`.
struct Epilogue {
  const char* file;
  double (*act)(double);
};
const Epilogue kRelu{"tile/gemm_bias_relu.tile", [](double x) { return std::max(x, 0.0); }};
const Epilogue kGelu{"tile/gemm_bias_gelu.tile",
                     [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }};

void expect_gemm_bias_act(const Epilogue& epilogue, const std::map<std::string, std::string>& defines,
                          const target::Target& target, int64_t m, int64_t n, int64_t k, bool gpu = false) {
  SCOPED_TRACE(epilogue.file);
  example_test::F16Matrix a = random_f16(m * k, 21), b = random_f16(n * k, 22), bias = random_f16(n, 23);
  std::vector<uint8_t> c = poisoned(m * n * 2);
  interp::Arguments args;
  args.buffers = {{"a_ptr", &a.bytes}, {"b_ptr", &b.bytes}, {"bias_ptr", &bias.bytes}, {"c_ptr", &c}};
  args.scalars["M"] = interp::ScalarValue{false, m, 0.0};
  args.scalars["N"] = interp::ScalarValue{false, n, 0.0};
  args.scalars["K"] = interp::ScalarValue{false, k, 0.0};
  Diagnostics diags;
  if (gpu) {
    const std::string source = example_test::read_text(example_test::example_path(epilogue.file));
    ir::ParseOptions options;
    options.defines = defines;
    std::optional<ir::Program> p = ir::parse_program(source, diags, options);
    ASSERT_TRUE(p && exec::run_on_gpu(*p, args, diags)) << diags.render(epilogue.file, "");
  } else {
    std::optional<ir::Program> p = lowered(epilogue.file, defines, target);
    ASSERT_TRUE(p);
    ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render(epilogue.file, "");
  }
  std::vector<double> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = bias.values[static_cast<size_t>(j)];
      for (int64_t kk = 0; kk < k; ++kk)
        s += a.values[static_cast<size_t>(i * k + kk)] * b.values[static_cast<size_t>(j * k + kk)];
      want[static_cast<size_t>(i * n + j)] = epilogue.act(s);
    }
  }
  // f32 sums in the tensor cores' order, then one rounding to f16.
  expect_f16_near(c, want, n, 1e-5 * static_cast<double>(k));
}

TEST(TileParallel, GemmBiasEpiloguesOnMmaSync) {
  for (const Epilogue& e : {kRelu, kGelu})
    expect_gemm_bias_act(e, {{"BM", "64"}, {"BN", "64"}, {"BK", "32"}, {"STAGES", "2"}},
                         target::Target::generic_sm80(), 70, 72, 64);
}

TEST(TileParallel, GemmBiasEpiloguesOnWgmma) {
  for (const Epilogue& e : {kRelu, kGelu})
    expect_gemm_bias_act(e, {{"BN", "64"}, {"STAGES", "2"}}, target::Target::h100_sxm(), 130, 72, 128);
}

// Loop variables as values (Iota tiles): a causal mask shifted by a kernel argument, a float ramp along the
// columns, an integer min along the rows and an integer division, on random data against a double reference.
TEST(TileParallel, IndexValuesOnTheInterpreter) {
  const std::string source =
      "def index_values<1>[threads=128](f32* x_ptr, f32* y_ptr, i32 q0):\n"
      "    x = ViewGlobal(x_ptr, dtype=f32, shape=[16, 64])\n"
      "    y = ViewGlobal(y_ptr, dtype=f32, shape=[16, 64])\n"
      "    s = AllocateFragment(f32, shape=[16, 64])\n"
      "    Copy(x, s)\n"
      "    for i, j in Parallel(16, 64):\n"
      "        s[i, j] = where(j <= q0 + i, s[i, j], -inf)\n"
      "        y[i, j] = s[i, j] + j * 0.5 - min(i, 3) + (j - 7) / 4\n";
  std::optional<ir::Program> p = lowered_text(source, "index_values.tile");
  ASSERT_TRUE(p);
  Diagnostics diags;
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(16 * 64);
  for (float& v : x) v = dist(rng);
  std::vector<uint8_t> xb(x.size() * 4), yb = poisoned(x.size() * 4);
  std::memcpy(xb.data(), x.data(), xb.size());
  const int64_t q0 = 5;
  interp::Arguments args;
  args.buffers = {{"x_ptr", &xb}, {"y_ptr", &yb}};
  args.scalars["q0"] = interp::ScalarValue{false, q0, 0.0};
  ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render("index_values.tile", source);
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t j = 0; j < 64; ++j) {
      float got = 0;
      std::memcpy(&got, &yb[static_cast<size_t>(4 * (i * 64 + j))], 4);
      if (j > q0 + i) {
        EXPECT_TRUE(std::isinf(got) && got < 0) << "masked element [" << i << ", " << j << "]: " << got;
        continue;
      }
      // (j - 7) / 4 truncates toward zero, as the language's integer division does.
      const double want =
          x[static_cast<size_t>(i * 64 + j)] + j * 0.5 - std::min<int64_t>(i, 3) + (j - 7) / 4;
      EXPECT_NEAR(got, want, 1e-5) << "element [" << i << ", " << j << "]";
    }
}

// Corners of index values a review found: a where of two scalar values (f32, the rule for two scalars),
// comparisons stored or compared after a broadcast (bool has no arithmetic to widen with), a bare `inf`, and
// an i64 argument, which makes `j < n` an i64 comparison (truncated to i32, 2^32 + 5 would be 5).
TEST(TileParallel, IndexValueCorners) {
  const std::string source =
      "def corners<1>[threads=32](f32* y_ptr, i64 n):\n"
      "    y = ViewGlobal(y_ptr, dtype=f32, shape=[5, 4, 8])\n"
      "    for i, j in Parallel(4, 8):\n"
      "        y[0, i, j] = where(j < 4, 1, 0)\n"
      "        y[1, i, j] = j < 4\n"
      "        y[2, i, j] = (i < 2) == (j < 4)\n"
      "        y[3, i, j] = where(j < 6, j, inf)\n"
      "        y[4, i, j] = where(j < n, 1.0, 0.0)\n";
  std::optional<ir::Program> p = lowered_text(source, "corners.tile");
  ASSERT_TRUE(p);
  Diagnostics diags;
  std::vector<uint8_t> y = poisoned(5 * 4 * 8 * 4);
  interp::Arguments args;
  args.buffers = {{"y_ptr", &y}};
  args.scalars["n"] = interp::ScalarValue{false, (int64_t{1} << 32) + 5, 0.0};
  ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render("corners.tile", source);
  auto at = [&](int r, int i, int j) {
    float v = 0;
    std::memcpy(&v, &y[static_cast<size_t>(4 * ((r * 4 + i) * 8 + j))], 4);
    return v;
  };
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(at(0, i, j), j < 4 ? 1.0f : 0.0f) << i << ", " << j;
      EXPECT_EQ(at(1, i, j), j < 4 ? 1.0f : 0.0f) << i << ", " << j;
      EXPECT_EQ(at(2, i, j), (i < 2) == (j < 4) ? 1.0f : 0.0f) << i << ", " << j;
      EXPECT_EQ(at(3, i, j), j < 6 ? static_cast<float>(j) : INFINITY) << i << ", " << j;
      EXPECT_EQ(at(4, i, j), 1.0f) << i << ", " << j;
    }
}

// A Parallel loop prints as it was written, and the printed text parses to the same text.
TEST(TileParallel, MixedIntegersComputeAsTheLanguageSays) {
  // i32 + u32 computes in i32 (at equal width the signed type wins, ir::binary_result_type): -2 + 1 is -1,
  // stored into i64 as -1, not as 4294967295.
  const std::string source =
      "def mixed<1>[threads=32](i32* a_ptr, u32* b_ptr, i64* c_ptr):\n"
      "    a = ViewGlobal(a_ptr, dtype=i32, shape=[32])\n"
      "    b = ViewGlobal(b_ptr, dtype=u32, shape=[32])\n"
      "    c = ViewGlobal(c_ptr, dtype=i64, shape=[32])\n"
      "    for i in Parallel(32):\n"
      "        c[i] = a[i] + b[i]\n";
  std::optional<ir::Program> p = lowered_text(source, "mixed.tile");
  ASSERT_TRUE(p);
  Diagnostics diags;
  std::vector<uint8_t> a(32 * 4), b(32 * 4), c = poisoned(32 * 8);
  for (int k = 0; k < 32; ++k) {
    const int32_t minus_two = -2;
    const uint32_t one = 1;
    std::memcpy(&a[static_cast<size_t>(4 * k)], &minus_two, 4);
    std::memcpy(&b[static_cast<size_t>(4 * k)], &one, 4);
  }
  interp::Arguments args;
  args.buffers = {{"a_ptr", &a}, {"b_ptr", &b}, {"c_ptr", &c}};
  ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render("mixed.tile", source);
  for (int k = 0; k < 32; ++k) {
    int64_t v = 0;
    std::memcpy(&v, &c[static_cast<size_t>(8 * k)], 8);
    EXPECT_EQ(v, -1) << "element " << k;
  }
}

TEST(TileParallel, TextRoundTrips) {
  for (const char* name :
       {"tile/softmax.tile", "tile/rms_norm.tile", "tile/gemm_bias_relu.tile", "tile/gemm_bias_gelu.tile"}) {
    SCOPED_TRACE(name);
    const std::string source = example_test::read_text(example_test::example_path(name));
    Diagnostics diags;
    std::optional<ir::Program> p = ir::parse_program(source, diags);
    ASSERT_TRUE(p) << diags.render(name, source);
    const std::string printed = ir::print_program(*p);
    EXPECT_NE(printed.find("in Parallel("), std::string::npos);
    std::optional<ir::Program> q = ir::parse_program(printed, diags);
    ASSERT_TRUE(q) << diags.render(name, printed);
    EXPECT_EQ(ir::print_program(*q), printed);
  }
}

// examples/tile/dequant_gemm.tile with its weight type replaced by `wtype` (the example's one edit for
// another type): C = A @ (codes * scale)^T against a double reference, the codes every code of the type.
// With `in_registers`, the dequantized tile is a fragment instead of a shared tile (the example's other
// edit): the Parallel loop writes it in the Gemm's B-operand layout, which infer_layouts fixes, and the Gemm
// reads it from registers (mma.sync: wgmma takes b only from shared memory).
void expect_dequant_gemm(const std::string& wtype, const std::map<std::string, std::string>& defines,
                         const target::Target& target, int64_t m, int64_t n, int64_t k, bool gpu = false,
                         bool in_registers = false, const std::string& example = "tile/dequant_gemm.tile",
                         const std::vector<std::pair<std::string, std::string>>& edits = {}) {
  std::string source = example_test::read_text(example_test::example_path(example));
  for (const auto& [from, to] : edits) {
    const size_t at = source.find(from);
    ASSERT_NE(at, std::string::npos) << "the example no longer has " << from;
    source.replace(at, from.size(), to);
  }
  source = with_weight_type(source, wtype);
  if (in_registers) {
    const std::string shared = "sb = AllocateShared(f16, shape=[BN, BK])";
    const size_t at = source.find(shared);
    ASSERT_NE(at, std::string::npos) << "the example no longer allocates sb as " << shared;
    source.replace(at, shared.size(), "sb = AllocateFragment(f16, shape=[BN, BK])");
  }
  const DataType wt = DataType::parse(wtype);
  const int64_t group = 128;
  example_test::F16Matrix a = random_f16(m * k, 31), scales = random_f16(n * ((k + group - 1) / group), 32);
  std::vector<uint64_t> codes = example_test::random_codes(n * k, wt.bits(), 33);
  std::vector<double> w(codes.size());
  for (size_t i = 0; i < codes.size(); ++i) {
    while (!std::isfinite(decode(wt, codes[i]))) codes[i] = (codes[i] + 1) % (uint64_t{1} << wt.bits());
    w[i] = decode(wt, codes[i]);
  }
  std::vector<uint8_t> w_bytes = pack(wt, codes), c = poisoned(m * n * 2);
  // Scales of 1/16 of their draw keep every product within f16 for the 8-bit types.
  std::vector<uint64_t> scale_codes;
  std::vector<double> sv;
  for (double v : scales.values) {
    scale_codes.push_back(encode(DataType::f16(), v / 16));
    sv.push_back(decode(DataType::f16(), scale_codes.back()));
  }
  // dequant_gemm_rs_packed.tile reads its scales transposed, ST[K / GROUP, N] (a step's scales one row).
  if (example == "tile/dequant_gemm_rs_packed.tile") {
    const int64_t groups = (k + group - 1) / group;
    std::vector<uint64_t> transposed(scale_codes.size());
    for (int64_t j = 0; j < n; ++j)
      for (int64_t g = 0; g < groups; ++g)
        transposed[static_cast<size_t>(g * n + j)] = scale_codes[static_cast<size_t>(j * groups + g)];
    scale_codes = std::move(transposed);
  }
  std::vector<uint8_t> s_bytes = pack(DataType::f16(), scale_codes);
  interp::Arguments args;
  args.buffers = {{"a_ptr", &a.bytes}, {"w_ptr", &w_bytes}, {"s_ptr", &s_bytes}, {"c_ptr", &c}};
  args.scalars["M"] = interp::ScalarValue{false, m, 0.0};
  args.scalars["N"] = interp::ScalarValue{false, n, 0.0};
  args.scalars["K"] = interp::ScalarValue{false, k, 0.0};
  Diagnostics diags;
  ir::ParseOptions options;
  options.defines = defines;
  std::optional<ir::Program> p = ir::parse_program(source, diags, options);
  ASSERT_TRUE(p) << diags.render("dequant_gemm.tile", source);
  // A weight stored in tiles of a layout (ViewGlobal(..., layout=auto): the lowered program's choice), packed
  // by the host helper a user calls (layout::TiledStorage; padding codes 0). On the GPU the program is
  // lowered again for the device, which must choose the same (the test's target is the device's kind).
  std::optional<ir::Program> lowered =
      transform::lower(*p, diags, {.target = target, .verify_each_pass = true});
  ASSERT_TRUE(lowered) << diags.render("dequant_gemm.tile", source);
  for (const auto& [name, wl] : ir::pointer_layouts(*lowered))
    if (name == "w_ptr") w_bytes = layout::TiledStorage(wl, {n, k}).pack(wt.bits(), codes);
  if (gpu) {
    ASSERT_TRUE(exec::run_on_gpu(*p, args, diags)) << diags.render("dequant_gemm.tile", source);
  } else {
    ASSERT_TRUE(interp::run_program(*lowered, args, diags)) << diags.render("dequant_gemm.tile", source);
  }
  const int64_t groups = (k + group - 1) / group;
  std::vector<double> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        // The tile holds code * scale rounded to f16 (the Parallel loop's f16 product), as the Gemm reads it.
        const double b = decode(
            DataType::f16(), encode(DataType::f16(), w[static_cast<size_t>(j * k + kk)] *
                                                         sv[static_cast<size_t>(j * groups + kk / group)]));
        sum += a.values[static_cast<size_t>(i * k + kk)] * b;
      }
      want[static_cast<size_t>(i * n + j)] = sum;
    }
  }
  expect_f16_near(c, want, n, 1e-5 * static_cast<double>(k));
}

TEST(TileParallel, DequantGemmOfEveryWidthOnTheInterpreter) {
  for (const char* wtype :
       {"u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8", "i4", "f4e2m1", "f6e3m2", "f8e4m3"}) {
    SCOPED_TRACE(wtype);
    expect_dequant_gemm(wtype, {{"BN", "64"}}, target::Target::generic_sm80(), 70, 72, 256);
  }
}

TEST(TileParallel, DequantGemmOnWgmma) {
  expect_dequant_gemm("u4", {}, target::Target::h100_sxm(), 70, 136, 192);
}

// dequant_gemm_rs.tile: the weights dequantized in registers as wgmma's register a (sm_90a), or through
// mma.sync (sm_80); ragged in every direction, two k-tiles past the pipeline's stages.
TEST(TileParallel, DequantGemmWithRegisterA) {
  for (const char* wtype : {"u4", "i8"}) {
    SCOPED_TRACE(wtype);
    expect_dequant_gemm(wtype, {}, target::Target::h100_sxm(), 70, 136, 320, false, false,
                        "tile/dequant_gemm_rs.tile");
  }
  expect_dequant_gemm("u3", {}, target::Target::generic_sm80(), 70, 136, 320, false, false,
                      "tile/dequant_gemm_rs.tile");
}

// dequant_gemm_rs_packed.tile: the weights stored tile by tile in their fragment's order, the tile copied
// into shared memory as it lies and read as whole words (sm_90a), or element by element where the layouts
// do not line up (mma.sync's fragment on sm_80 is not the weights' order). K ragged within a tile, N past the
// last whole tile: the edge tiles take the element-wise path.
TEST(TileParallel, DequantGemmOfPackedWeightsOnTheInterpreter) {
  for (const char* wtype : {"u4", "u2", "i4", "f4e2m1", "u8"}) {
    SCOPED_TRACE(wtype);
    expect_dequant_gemm(wtype, {}, target::Target::h100_sxm(), 70, 136, 320, false, false,
                        "tile/dequant_gemm_rs_packed.tile");
  }
  expect_dequant_gemm("u4", {}, target::Target::h100_sxm(), 64, 256, 256, false, false,
                      "tile/dequant_gemm_rs_packed.tile");
  // The weight tiles as bulk copies on the stages' barriers, with and without a producer warpgroup.
  for (const char* wtype : {"u4", "f4e2m1", "u2"}) {
    SCOPED_TRACE(wtype);
    expect_dequant_gemm(wtype, {{"TMA", "True"}}, target::Target::h100_sxm(), 70, 136, 320, false, false,
                        "tile/dequant_gemm_rs_packed.tile");
    expect_dequant_gemm(wtype, {{"TMA", "True"}, {"WS", "True"}}, target::Target::h100_sxm(), 70, 136, 320,
                        false, false, "tile/dequant_gemm_rs_packed.tile");
  }
  expect_dequant_gemm("u4", {{"TMA", "True"}, {"WS", "True"}, {"BN", "128"}, {"BK", "64"}},
                      target::Target::h100_sxm(), 64, 256, 256, false, false,
                      "tile/dequant_gemm_rs_packed.tile");
  // Two consumer warpgroups (the weights' order follows the fragment's spatial(2, 1)).
  expect_dequant_gemm(
      "u4", {{"TMA", "True"}, {"WS", "True"}, {"THREADS", "256"}, {"BN", "128"}, {"BM", "128"}},
      target::Target::h100_sxm(), 70, 136, 320, false, false, "tile/dequant_gemm_rs_packed.tile");
  expect_dequant_gemm("u3", {}, target::Target::generic_sm80(), 70, 136, 320, false, false,
                      "tile/dequant_gemm_rs_packed.tile");
}

// layout=auto: the order derived for the packed example's weights is thread_major of the fragment that
// dequantizes them, one local digit per 64-column group (split_register_gemms' groups), in chunks of 16 bytes
// -- for one consumer warpgroup exactly the order the example's author once wrote by hand. The shared tile
// takes it too (the Copy moves bytes as they lie). An 8-bit type's chunks are 16 codes; on sm_80 the order
// follows mma.sync's fragment instead.
TEST(TileParallel, AutoLayoutIsTheOrderOfTheLoopThatReadsTheTile) {
  const std::string source =
      example_test::read_text(example_test::example_path("tile/dequant_gemm_rs_packed.tile"));
  auto derived = [&](const std::map<std::string, std::string>& defines, const target::Target& target,
                     const std::string& wtype = "u4") -> std::string {
    const std::string text = with_weight_type(source, wtype);
    Diagnostics diags;
    ir::ParseOptions options;
    options.defines = defines;
    std::optional<ir::Program> p = ir::parse_program(text, diags, options), inferred;
    if (p)
      p = transform::lower(*std::move(p), diags,
                           {.target = target,
                            .verify_each_pass = true,
                            .after_pass = [&](const std::string& pass, const ir::Program& after) {
                              if (pass == "infer_layouts") inferred = after;
                            }});
    if (!p || !inferred) return diags.render("dequant_gemm_rs_packed.tile", text);
    const auto layouts = ir::pointer_layouts(*p);
    if (layouts.size() != 1 || layouts[0].first != "w_ptr") return "not one layout, for w_ptr";
    // The shared tile the weights are copied into is in the same order (before pipeline_loops stages it).
    struct Find : ir::IRVisitor {
      std::optional<layout::Layout> sw;
      void visit_inst_stmt(const ir::InstStmt& s) override {
        if (const auto* a = s.inst->as<ir::AllocateSharedInst>(); a && s.results[0]->name == "sw")
          sw = a->layout;
      }
    } find;
    find.visit_program(*inferred);
    if (!find.sw || !(*find.sw == layouts[0].second)) return "sw is not in w's order";
    return layout::print_layout(layouts[0].second);
  };
  auto canonical = [](const std::string& text) { return layout::print_layout(layout::parse_layout(text)); };
  const target::Target hopper = target::Target::for_arch("sm_90a");
  EXPECT_EQ(derived({}, hopper),
            canonical("thread_major(spatial(1, 1).local(1, 8).spatial(4, 1).column_local(2, 2).spatial(8, 4)"
                      ".local(1, 2), chunk=32)"));
  EXPECT_EQ(derived({{"THREADS", "256"}, {"BN", "128"}}, hopper),
            canonical("thread_major(spatial(2, 1).local(1, 8).spatial(4, 1).column_local(2, 2).spatial(8, 4)"
                      ".local(1, 2), chunk=32)"));
  // Two 64-row blocks a thread: each group's chunks of both blocks before the next group's.
  EXPECT_EQ(derived({{"BN", "128"}}, hopper),
            canonical("thread_major(local(1, 2).local(2, 4).spatial(4, 1).column_local(2, 2).spatial(8, 4)"
                      ".local(1, 2), chunk=32)"));
  EXPECT_EQ(derived({}, hopper, "u8"),
            canonical("thread_major(spatial(1, 1).local(1, 8).spatial(4, 1).column_local(2, 2).spatial(8, 4)"
                      ".local(1, 2), chunk=16)"));
  const std::string ampere = derived({}, target::Target::generic_sm80());
  EXPECT_NE(ampere, derived({}, hopper));
  EXPECT_EQ(layout::parse_layout(ampere).num_threads(), 1) << ampere;
}

// dequant_gemm_rs_groups.tile: two register-A Gemms a step, asynchronous on sm_90a; K ragged within the
// second group (200) and at a group's edge (320).
TEST(TileParallel, DequantGemmWithRegisterAGroups) {
  for (const char* wtype : {"u4", "i8"}) {
    for (int64_t k : {200, 320}) {
      SCOPED_TRACE(fmt::format("{} k {}", wtype, k));
      expect_dequant_gemm(wtype, {}, target::Target::h100_sxm(), 70, 136, k, false, false,
                          "tile/dequant_gemm_rs_groups.tile");
    }
  }
  expect_dequant_gemm("u3", {}, target::Target::generic_sm80(), 70, 136, 320, false, false,
                      "tile/dequant_gemm_rs_groups.tile");
}

// On sm_90a the step issues both groups' products as DotAsync, the second group's conversion between them,
// and retires both at the step's end. A fragment written while its product may still run waits for that
// product first: a Fill of wf0 after both products waits for the older one only (DotAsyncWait(1)), and
// one fragment for both groups waits for the first product before the second conversion.
TEST(TileParallel, RegisterAGemmsOfAStepRunAsynchronously) {
  auto loop_text = [](const std::string& source) {
    const std::optional<ir::Program> p =
        lowered_text(source, "dequant_gemm_rs_groups.tile", {}, target::Target::for_arch("sm_90a"));
    if (!p) return std::string();
    const std::string text = ir::print_program(*p);
    const size_t loop = text.find("for k in");
    return loop == std::string::npos ? text : text.substr(loop);
  };
  const std::string source =
      example_test::read_text(example_test::example_path("tile/dequant_gemm_rs_groups.tile"));
  // The GPU code: both products between straight-line conversions (the RS form's rule), compiled.
  const std::optional<ir::Program> hopper =
      lowered_text(source, "dequant_gemm_rs_groups.tile", {}, target::Target::for_arch("sm_90a"));
  ASSERT_TRUE(hopper);
  const codegen::cuda::EmittedKernel k =
      codegen::cuda::emit_cuda(*hopper, {.target = target::Target::for_arch("sm_90a")});
  if (runtime::nvrtc_available()) {
    runtime::CompileOptions options{.arch = "sm_90a"};
    options.extra_flags.push_back("-Xptxas=-v");
    const runtime::CompiledKernel c = runtime::compile_cuda(k.source, k.kernel_name + ".cu", options);
    EXPECT_NE(c.log.find(" 0 bytes spill stores"), std::string::npos) << c.log;
  }
  const std::string two = loop_text(source);
  const size_t first = two.find("DotAsync(wf0"), second = two.find("DotAsync(wf1");
  ASSERT_NE(first, std::string::npos) << two;
  ASSERT_NE(second, std::string::npos) << two;
  EXPECT_NE(two.find("out=wf1", first), std::string::npos);  // converted while group 0 multiplies
  EXPECT_EQ(two.find("DotAsyncWait", first), two.find("DotAsyncWait(0)", second));
  EXPECT_EQ(two.find("DotAsyncWait(", two.find("DotAsyncWait(0)", second) + 1), std::string::npos);

  const std::string last_gemm = "        Gemm(wf1, sa1, acc, transpose_b=True)\n";
  const std::vector<std::pair<std::string, std::string>> refill = {
      {last_gemm, last_gemm + "        Fill(wf0, 0.0)\n"}};
  std::string filled = source;
  filled.replace(filled.find(last_gemm), last_gemm.size(), refill[0].second);
  const std::string text = loop_text(filled);
  const size_t one = text.find("DotAsyncWait(1)");
  ASSERT_NE(one, std::string::npos) << text;
  EXPECT_LT(text.find("DotAsync(wf1"), one) << text;
  EXPECT_LT(one, text.find("DotAsyncWait(0)")) << text;
  expect_dequant_gemm("u4", {}, target::Target::h100_sxm(), 70, 136, 320, false, false,
                      "tile/dequant_gemm_rs_groups.tile", refill);

  // Both groups in one fragment (both Gemms take it in wgmma's register-A layout): the second group's
  // conversion waits for the first group's product.
  const std::vector<std::pair<std::string, std::string>> one_fragment = {{"wf1[i, j] =", "wf0[i, j] ="},
                                                                         {"Gemm(wf1", "Gemm(wf0"}};
  std::string single = source;
  for (const auto& [from, to] : one_fragment) single.replace(single.find(from), from.size(), to);
  const std::string shared = loop_text(single);
  const size_t wait = shared.find("DotAsyncWait(0)");
  ASSERT_NE(wait, std::string::npos) << shared;
  EXPECT_LT(shared.find("DotAsync(wf0"), wait) << shared;
  EXPECT_LT(wait, shared.find("offset=[0, 64]")) << shared;  // before the second group's codes
  expect_dequant_gemm("u4", {}, target::Target::h100_sxm(), 70, 136, 320, false, false,
                      "tile/dequant_gemm_rs_groups.tile", one_fragment);

  // A global read between the products (the second group's scale read where it is used): the GPU code could
  // not keep the first product in flight across it, so both Gemms stay synchronous, and the program still
  // compiles for sm_90a.
  const std::vector<std::pair<std::string, std::string>> global_read = {
      {"wf1[i, j] = sw[i, G + j] * sc[i]", "wf1[i, j] = sw[i, G + j] * s[bn * BN + i, k * BK / GROUP]"}};
  std::string late = source;
  late.replace(late.find(global_read[0].first), global_read[0].first.size(), global_read[0].second);
  const std::string sync = loop_text(late);
  EXPECT_EQ(sync.find("DotAsync"), std::string::npos) << sync;
  const std::optional<ir::Program> late_program =
      lowered_text(late, "dequant_gemm_rs_groups.tile", {}, target::Target::for_arch("sm_90a"));
  ASSERT_TRUE(late_program);
  EXPECT_NO_THROW(codegen::cuda::emit_cuda(*late_program, {.target = target::Target::for_arch("sm_90a")}));
  expect_dequant_gemm("u4", {}, target::Target::h100_sxm(), 70, 136, 320, false, false,
                      "tile/dequant_gemm_rs_groups.tile", global_read);
}

// dequant_gemm_rs.tile with 128 columns a step: split_register_gemms splits its Gemm into two groups of 64 on
// sm_90a (each a register-A Gemm, the scale row read once before them), which pipeline_loops runs
// asynchronously; on sm_80 it stays one mma.sync Gemm. Both compute the product, K ragged.
TEST(TileParallel, RegisterAGemmSplitIntoGroups) {
  const std::string source = example_test::read_text(example_test::example_path("tile/dequant_gemm_rs.tile"));
  const std::map<std::string, std::string> wide = {{"BK", "128"}};
  const std::optional<ir::Program> hopper =
      lowered_text(source, "dequant_gemm_rs.tile", wide, target::Target::for_arch("sm_90a"));
  ASSERT_TRUE(hopper);
  const std::string text = ir::print_program(*hopper);
  const size_t first = text.find("DotAsync(wf_g0"), second = text.find("DotAsync(wf_g1");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_NE(text.find("out=wf_g1", first), std::string::npos) << text;  // converted between the products
  EXPECT_EQ(text.find("LoadGlobal", first), text.npos) << text;         // the scale row is read before them
  EXPECT_NO_THROW(codegen::cuda::emit_cuda(*hopper, {.target = target::Target::for_arch("sm_90a")}));
  const std::optional<ir::Program> ampere = lowered_text(source, "dequant_gemm_rs.tile", wide);
  ASSERT_TRUE(ampere);
  EXPECT_EQ(ir::print_program(*ampere).find("_g0"), std::string::npos);
  for (const char* wtype : {"u4", "i8"}) {
    for (int64_t k : {200, 320}) {
      SCOPED_TRACE(fmt::format("{} k {}", wtype, k));
      expect_dequant_gemm(wtype, wide, target::Target::h100_sxm(), 70, 136, k, false, false,
                          "tile/dequant_gemm_rs.tile");
    }
  }
  // A register read along j (a fragment's columns cannot be taken by groups) is left as written; a global
  // read along j is split, its groups then synchronous (a LoadGlobal between two products). Both compile.
  auto variant = [&](const std::string& from, const std::string& to) {
    std::string text = source;
    for (const auto& [f, t] : std::vector<std::pair<std::string, std::string>>{
             {from, to},
             {"    Fill(acc, 0.0)\n",
              "    Fill(acc, 0.0)\n    z = AllocateFragment(f16, shape=[BN, BK])\n"
              "    Fill(z, 1.0)\n"}}) {
      const size_t at = text.find(f);
      EXPECT_NE(at, std::string::npos) << f;
      if (at != std::string::npos) text.replace(at, f.size(), t);
    }
    const std::optional<ir::Program> p =
        lowered_text(text, "dequant_gemm_rs.tile", wide, target::Target::for_arch("sm_90a"));
    if (!p) return std::string();
    EXPECT_NO_THROW(codegen::cuda::emit_cuda(*p, {.target = target::Target::for_arch("sm_90a")}));
    return ir::print_program(*p);
  };
  const std::string scaled = "wf[i, j] = sw[i, j] * s[bn * BN + i, k * BK / GROUP]";
  const std::string fragment_read = variant(scaled, "wf[i, j] = sw[i, j] * z[i, j]");
  EXPECT_EQ(fragment_read.find("wf_g0"), std::string::npos) << fragment_read;
  const std::string global_read = variant(scaled, "wf[i, j] = sw[i, j] * a[bn * BN + i, k * BK + j]");
  EXPECT_NE(global_read.find("wf_g1"), std::string::npos) << global_read;
  EXPECT_EQ(global_read.find("DotAsync"), std::string::npos) << global_read;
  expect_dequant_gemm("u3", wide, target::Target::generic_sm80(), 70, 136, 320, false, false,
                      "tile/dequant_gemm_rs.tile");
}

// The Gemm of dequant_gemm_rs.tile is one wgmma Dot with a in registers on sm_90a (the RS form), whose
// weights no shared tile holds; on sm_80 it is mma.sync.
TEST(TileParallel, RegisterAGemmLowersToTheRsForm) {
  const std::string source = example_test::read_text(example_test::example_path("tile/dequant_gemm_rs.tile"));
  auto lowered = [&](const target::Target& t) {
    const std::optional<ir::Program> p = lowered_text(source, "dequant_gemm_rs.tile", {}, t);
    return p ? codegen::cuda::emit_cuda(*p, {.target = t}).source : std::string();
  };
  const std::string hopper = lowered(target::Target::for_arch("sm_90a"));
  // m64n64k16 with a's four fragment registers as operands 32..35 (after the 32 accumulator registers),
  // not a descriptor.
  EXPECT_NE(hopper.find("wgmma.mma_async.sync.aligned.m64n64k16"), std::string::npos);
  EXPECT_NE(hopper.find("{%32, %33, %34, %35}, %36"), std::string::npos);
  const std::string ampere = lowered(target::Target::generic_sm80());
  EXPECT_EQ(ampere.find("wgmma"), std::string::npos);
  EXPECT_NE(ampere.find("mma.sync"), std::string::npos);
}

TEST(TileParallel, DequantGemmWithTheTileInRegisters) {
  for (const char* wtype : {"u4", "u3", "f6e3m2", "i4"}) {
    SCOPED_TRACE(wtype);
    expect_dequant_gemm(wtype, {{"BN", "64"}}, target::Target::generic_sm80(), 70, 72, 256, false, true);
  }
  expect_dequant_gemm("u4", {}, target::Target::h100_sxm(), 70, 136, 192, false, true);
}

// Split-K with AtomicAdd: SPLIT blocks per tile of C each multiply their share of K and add it into C.
constexpr const char* kSplitK = R"(
BM, BN, BK = 64, 32, 32
SPLIT = 3

def split_k<ceil_div(M, BM), ceil_div(N, BN), SPLIT>[threads=128](f16* a_ptr, f16* b_ptr, f32* c_ptr, i32 M, i32 N, i32 K):
    bm, bn, ks = BlockIndices()
    a = ViewGlobal(a_ptr, dtype=f16, shape=[M, K])
    b = ViewGlobal(b_ptr, dtype=f16, shape=[N, K])
    c = ViewGlobal(c_ptr, dtype=f32, shape=[M, N])
    sa = AllocateShared(f16, shape=[BM, BK])
    sb = AllocateShared(f16, shape=[BN, BK])
    acc = AllocateFragment(f32, shape=[BM, BN])
    Fill(acc, 0.0)
    steps = ceil_div(K, BK)
    for k in Pipelined(ceil_div(steps - ks, SPLIT), stages=2):
        kk = ks + k * SPLIT
        Copy(a[bm * BM:, kk * BK:], sa)
        Copy(b[bn * BN:, kk * BK:], sb)
        Gemm(sa, sb, acc, transpose_b=True)
    AtomicAdd(acc, c[bm * BM:, bn * BN:])
)";

// `text` split-K's product on the interpreter; `copies` says how many CopyAsync the lowered program has.
void expect_split_k(const std::string& text, int copies) {
  const int64_t m = 70, n = 40, k = 200;  // 7 K steps over 3 blocks: shares of 3, 2 and 2
  Diagnostics diags;
  std::optional<ir::Program> p = ir::parse_program(text, diags);
  if (p)
    p = transform::lower(*std::move(p), diags,
                         {.target = target::Target::generic_sm80(), .verify_each_pass = true});
  ASSERT_TRUE(p) << diags.render("split_k.tile", kSplitK);
  example_test::F16Matrix a = random_f16(m * k, 41), b = random_f16(n * k, 42);
  std::vector<uint8_t> c(static_cast<size_t>(m * n * 4), 0);  // C starts at 0: the blocks add into it
  interp::Arguments args;
  args.buffers = {{"a_ptr", &a.bytes}, {"b_ptr", &b.bytes}, {"c_ptr", &c}};
  args.scalars["M"] = interp::ScalarValue{false, m, 0.0};
  args.scalars["N"] = interp::ScalarValue{false, n, 0.0};
  args.scalars["K"] = interp::ScalarValue{false, k, 0.0};
  ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render("split_k.tile", kSplitK);
  const std::vector<uint64_t> codes = unpack(DataType::f32(), c, m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0, mag = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const double x =
            a.values[static_cast<size_t>(i * k + kk)] * b.values[static_cast<size_t>(j * k + kk)];
        want += x;
        mag += std::abs(x);
      }
      const double got = decode(DataType::f32(), codes[static_cast<size_t>(i * n + j)]);
      ASSERT_LE(std::abs(got - want), 1e-6 * mag + 1e-6) << "C[" << i << ", " << j << "]";
    }
  }
  struct Count : ir::IRVisitor {
    int copies = 0;
    void visit_inst(const ir::Inst& inst) override { copies += inst->kind == ir::InstKind::CopyAsync; }
  } count;
  count.visit_program(*p);
  EXPECT_EQ(count.copies, copies);
}

TEST(TileParallel, SplitKWithAtomicAdd) {
  // The K step as one expression of the loop variable: pipelined (2 copies in the prologue, 2 in the loop).
  std::string piped = kSplitK;
  piped.replace(piped.find("        kk = ks + k * SPLIT\n"),
                std::string("        kk = ks + k * SPLIT\n").size(), "");
  for (size_t at = piped.find("kk * BK"); at != std::string::npos; at = piped.find("kk * BK"))
    piped.replace(at, 7, "(ks + k * SPLIT) * BK");
  expect_split_k(piped, 4);
  // Through a scalar the body computes: a copy issued ahead cannot use it, so the loop is not pipelined
  // (it was once hoisted without its definition).
  expect_split_k(kSplitK, 0);
}

// The same kernels on the device, at sizes whose tiles are partial in every direction.
TEST(TileParallelGpu, KernelsOnTheDevice) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  expect_softmax(333, 1024, 1024, true);
  expect_softmax(333, 1000, 1024, true);
  expect_rms_norm(333, 1024, 1024, true);
  expect_rms_norm(333, 1000, 1024, true);
  for (const Epilogue& e : {kRelu, kGelu})
    expect_gemm_bias_act(e, {}, target::Target::h100_sxm(), 333, 520, 264, true);
  for (const char* wtype : {"u4", "u3", "f6e3m2"}) {
    SCOPED_TRACE(wtype);
    expect_dequant_gemm(wtype, {}, target::Target::h100_sxm(), 333, 520, 384, true);
  }
  expect_dequant_gemm("u4", {}, target::Target::h100_sxm(), 333, 520, 384, true, true);
  for (const char* wtype : {"u4", "i8"}) {
    SCOPED_TRACE(std::string("register a ") + wtype);
    expect_dequant_gemm(wtype, {}, target::Target::h100_sxm(), 333, 520, 384, true, false,
                        "tile/dequant_gemm_rs.tile");
    expect_dequant_gemm(wtype, {}, target::Target::h100_sxm(), 333, 520, 328, true, false,
                        "tile/dequant_gemm_rs_groups.tile");
    expect_dequant_gemm(wtype, {{"BK", "128"}}, target::Target::h100_sxm(), 333, 520, 328, true, false,
                        "tile/dequant_gemm_rs.tile");
    // Packed weights: interior tiles copied as they lie and read as words, the edge tiles element-wise.
    expect_dequant_gemm(wtype, {}, target::Target::h100_sxm(), 333, 520, 328, true, false,
                        "tile/dequant_gemm_rs_packed.tile");
    expect_dequant_gemm(wtype, {{"BN", "128"}, {"BK", "64"}}, target::Target::h100_sxm(), 333, 520, 384, true,
                        false, "tile/dequant_gemm_rs_packed.tile");
    // Bulk copies of the weight tiles (their element-wise fallback on the last, ragged tile of each row),
    // with a producer warpgroup.
    expect_dequant_gemm(wtype, {{"TMA", "True"}, {"WS", "True"}}, target::Target::h100_sxm(), 333, 520, 328,
                        true, false, "tile/dequant_gemm_rs_packed.tile");
    expect_dequant_gemm(wtype, {{"TMA", "True"}}, target::Target::h100_sxm(), 333, 520, 384, true, false,
                        "tile/dequant_gemm_rs_packed.tile");
    expect_dequant_gemm(wtype, {{"TMA", "True"}, {"WS", "True"}, {"THREADS", "256"}, {"BN", "128"}},
                        target::Target::h100_sxm(), 333, 520, 328, true, false,
                        "tile/dequant_gemm_rs_packed.tile");
  }
}

}  // namespace
}  // namespace tilevm::tile
