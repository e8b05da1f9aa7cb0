// The tile layer's Parallel loops and fragment reductions (examples/tile/softmax.tile, rms_norm.tile,
// gemm_bias_relu.tile) on the interpreter, against double references on fresh random inputs with poisoned
// outputs; and the text form of a Parallel loop, which prints back as it parses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "example_util.h"
#include "tilevm/ir/printer.h"

namespace tilevm::tile {
namespace {

using example_test::expect_f16_near;
using example_test::poisoned;
using example_test::random_f16;

std::optional<ir::Program> lowered(const std::string& name, const std::map<std::string, std::string>& defines,
                                   const target::Target& target = target::Target::generic_sm80()) {
  const std::string source = example_test::read_text(example_test::example_path(name));
  Diagnostics diags;
  ir::ParseOptions options;
  options.defines = defines;
  std::optional<ir::Program> p = ir::parse_program(source, diags, options);
  if (p) p = transform::lower(*std::move(p), diags, {.target = target, .verify_each_pass = true});
  if (!p) ADD_FAILURE() << diags.render(name, source);
  return p;
}

bool run(const ir::Program& p, const std::map<std::string, std::vector<uint8_t>*>& buffers, int64_t m,
         const std::string& name) {
  interp::Arguments args;
  args.buffers = buffers;
  args.scalars["M"] = interp::ScalarValue{false, m, 0.0};
  Diagnostics diags;
  const bool ok = interp::run_program(p, args, diags);
  if (!ok) ADD_FAILURE() << diags.render(name, "");
  return ok;
}

TEST(TileParallel, SoftmaxOnTheInterpreter) {
  const int64_t m = 7, n = 64;  // 7 rows: the second block's last row is outside x
  std::optional<ir::Program> p = lowered("tile/softmax.tile", {{"N", std::to_string(n)}});
  ASSERT_TRUE(p);
  example_test::F16Matrix x = random_f16(m * n, 11);
  std::vector<uint8_t> y = poisoned(m * n * 2);
  ASSERT_TRUE(run(*p, {{"x_ptr", &x.bytes}, {"y_ptr", &y}}, m, "softmax.tile"));
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

TEST(TileParallel, RmsNormOnTheInterpreter) {
  const int64_t m = 6, n = 128;
  std::optional<ir::Program> p = lowered("tile/rms_norm.tile", {{"N", std::to_string(n)}});
  ASSERT_TRUE(p);
  example_test::F16Matrix x = random_f16(m * n, 12), w = random_f16(n, 13);
  std::vector<uint8_t> y = poisoned(m * n * 2);
  ASSERT_TRUE(run(*p, {{"x_ptr", &x.bytes}, {"w_ptr", &w.bytes}, {"y_ptr", &y}}, m, "rms_norm.tile"));
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

// The fused epilogue on both Gemm forms: mma.sync fragments (sm_80) and the wgmma accumulator (sm_90a).
void expect_gemm_bias_relu(const std::map<std::string, std::string>& defines, const target::Target& target,
                           int64_t m, int64_t n, int64_t k) {
  std::optional<ir::Program> p = lowered("tile/gemm_bias_relu.tile", defines, target);
  ASSERT_TRUE(p);
  example_test::F16Matrix a = random_f16(m * k, 21), b = random_f16(n * k, 22), bias = random_f16(n, 23);
  std::vector<uint8_t> c = poisoned(m * n * 2);
  interp::Arguments args;
  args.buffers = {{"a_ptr", &a.bytes}, {"b_ptr", &b.bytes}, {"bias_ptr", &bias.bytes}, {"c_ptr", &c}};
  args.scalars["M"] = interp::ScalarValue{false, m, 0.0};
  args.scalars["N"] = interp::ScalarValue{false, n, 0.0};
  args.scalars["K"] = interp::ScalarValue{false, k, 0.0};
  Diagnostics diags;
  ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render("gemm_bias_relu.tile", "");
  std::vector<double> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = bias.values[static_cast<size_t>(j)];
      for (int64_t kk = 0; kk < k; ++kk)
        s += a.values[static_cast<size_t>(i * k + kk)] * b.values[static_cast<size_t>(j * k + kk)];
      want[static_cast<size_t>(i * n + j)] = std::max(s, 0.0);
    }
  }
  expect_f16_near(c, want, n);
}

TEST(TileParallel, GemmBiasReluOnMmaSync) {
  expect_gemm_bias_relu({{"BM", "64"}, {"BN", "64"}, {"BK", "32"}, {"STAGES", "2"}},
                        target::Target::generic_sm80(), 70, 72, 64);
}

TEST(TileParallel, GemmBiasReluOnWgmma) {
  expect_gemm_bias_relu({{"BN", "64"}, {"STAGES", "2"}}, target::Target::h100_sxm(), 130, 72, 128);
}

// A Parallel loop prints as it was written, and the printed text parses to the same text.
TEST(TileParallel, TextRoundTrips) {
  for (const char* name : {"tile/softmax.tile", "tile/rms_norm.tile", "tile/gemm_bias_relu.tile"}) {
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

}  // namespace
}  // namespace tilevm::tile
