// Helpers for the example tests (tests/unit/example_*_test.cpp): load and verify an examples/*.tile file,
// run programs on the interpreter, make seeded random inputs, and compute references in double.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>
#include "source_dir.h"

#include <gtest/gtest.h>

#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/parser.h"
#include "tilevm/layout/layout.h"
#include "tilevm/transform/lower.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::example_test {

// examples/NAME in the source tree (found from this file's path, so the tests run from any directory).
inline std::filesystem::path example_path(const std::string& name) {
  return tilevm::testing::source_dir() / "examples" / name;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The 1-based line of the first line of `source` that contains `needle` (0 when none does).
inline int line_of(const std::string& source, const std::string& needle) {
  std::istringstream in(source);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(needle) != std::string::npos) return n;
  }
  return 0;
}

// Parses examples/NAME (with -D overrides) and verifies it; a failure adds the rendered diagnostics to the
// test's output and returns nullopt.
inline std::optional<ir::Program> load_example(const std::string& name,
                                               const std::map<std::string, std::string>& defines = {}) {
  const std::string source = read_text(example_path(name));
  EXPECT_FALSE(source.empty()) << "cannot read " << example_path(name);
  Diagnostics diags;
  ir::ParseOptions options;
  options.defines = defines;
  std::optional<ir::Program> p = ir::parse_program(source, diags, options);
  if (!p) {
    ADD_FAILURE() << "parse failed:\n" << diags.render(name, source);
    return std::nullopt;
  }
  p = transform::lower(*std::move(p), diags, {.verify_each_pass = true});
  if (!p) ADD_FAILURE() << "verify failed:\n" << diags.render(name, source);
  return p;
}

// Runs `program` on the interpreter with these buffers; a failure adds the diagnostics to the test output.
inline bool run(const ir::Program& program, const std::map<std::string, std::vector<uint8_t>*>& buffers,
                const std::string& file_name, Diagnostics* diags_out = nullptr) {
  interp::Arguments args;
  args.buffers = buffers;
  Diagnostics diags;
  bool ok = interp::run_program(program, args, diags);
  if (diags_out) {
    *diags_out = diags;
  } else if (!ok) {
    ADD_FAILURE() << "run of " << file_name << " failed:\n"
                  << diags.render(file_name, read_text(example_path(file_name)));
  }
  return ok;
}

// Output buffers start as all-ones bytes (NaN for f16), so an element the program forgets to write shows.
inline std::vector<uint8_t> poisoned(int64_t bytes) {
  return std::vector<uint8_t>(static_cast<size_t>(bytes), 0xff);
}

// A matrix of f16 values drawn uniformly from [-1, 1] (rounded to f16): the codes packed as bytes, and the
// exact values.
struct F16Matrix {
  std::vector<uint8_t> bytes;
  std::vector<double> values;
};
inline F16Matrix random_f16(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<uint64_t> codes(static_cast<size_t>(count));
  F16Matrix m;
  for (auto& c : codes) {
    c = encode(DataType::f16(), dist(rng));
    m.values.push_back(decode(DataType::f16(), c));
  }
  m.bytes = pack(DataType::f16(), codes);
  return m;
}

// Uniformly random codes of a b-bit type (every code, so every value of the type).
inline std::vector<uint64_t> random_codes(int64_t count, int bits, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint64_t> dist(0, (uint64_t{1} << bits) - 1);
  std::vector<uint64_t> codes(static_cast<size_t>(count));
  for (auto& c : codes) c = dist(rng);
  return codes;
}

// The weight transform written straight from the definition of View (docs/language.md section 5): for every
// [BK, BN] tile of B[K, N] and every k-slice of it of SK rows, thread t's elements in `element_layout`
// (local-index order) form one little-endian bit stream; read back as words of `word_bits` it is thread t's
// word j, stored at element word_layout(t, j) of the slice. Slices are stored one after another, tiles
// row-major: out[K / BK, N / BN, BK * BN * bits / word_bits].
inline std::vector<uint8_t> reference_transform(const std::vector<uint64_t>& b_codes, int bits, int64_t K,
                                                int64_t N, int64_t BK, int64_t BN, int64_t SK,
                                                const layout::Layout& element_layout, int word_bits,
                                                const layout::Layout& word_layout) {
  const int64_t tile_words = BK * BN * bits / word_bits, slice_words = SK * BN * bits / word_bits;
  std::vector<uint64_t> words(static_cast<size_t>((K / BK) * (N / BN) * tile_words), 0);
  for (int64_t bk = 0; bk < K / BK; ++bk) {
    for (int64_t bj = 0; bj < N / BN; ++bj) {
      for (int64_t uk = 0; uk < BK / SK; ++uk) {
        for (int64_t t = 0; t < element_layout.num_threads(); ++t) {
          std::vector<uint64_t> stream_codes;
          for (int64_t i = 0; i < element_layout.num_locals(); ++i) {
            layout::Index e = element_layout.map(t, i);
            int64_t row = bk * BK + uk * SK + e[0], col = bj * BN + e[1];
            stream_codes.push_back(b_codes[static_cast<size_t>(row * N + col)]);
          }
          std::vector<uint8_t> stream = pack(bits, stream_codes);
          std::vector<uint64_t> thread_words = unpack(word_bits, stream, word_layout.num_locals());
          for (int64_t j = 0; j < word_layout.num_locals(); ++j) {
            int64_t w = word_layout.map(t, j)[0];
            words[static_cast<size_t>((bk * (N / BN) + bj) * tile_words + uk * slice_words + w)] =
                thread_words[static_cast<size_t>(j)];
          }
        }
      }
    }
  }
  return pack(word_bits, words);
}

// C = A @ B in double; A row-major [M, K], B's codes row-major [K, N] of a `b_type` integer type.
inline std::vector<double> reference_matmul(const std::vector<double>& a,
                                            const std::vector<uint64_t>& b_codes, DataType b_type, int64_t M,
                                            int64_t N, int64_t K) {
  std::vector<double> b(b_codes.size());
  for (size_t i = 0; i < b.size(); ++i) b[i] = decode(b_type, b_codes[i]);
  std::vector<double> c(static_cast<size_t>(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) {
      double x = a[static_cast<size_t>(m * K + k)];
      for (int64_t n = 0; n < N; ++n)
        c[static_cast<size_t>(m * N + n)] += x * b[static_cast<size_t>(k * N + n)];
    }
  }
  return c;
}

// Checks an f16 result against the reference: each element within f16 rounding of the reference (half an
// ulp, taken generously as 2^-10 relative) plus a small absolute slack for the f32 accumulation.
inline void expect_f16_near(const std::vector<uint8_t>& got_bytes, const std::vector<double>& expected,
                            int64_t N, double slack = 1e-3) {
  std::vector<uint64_t> got = unpack(DataType::f16(), got_bytes, static_cast<int64_t>(expected.size()));
  int failures = 0;
  for (size_t i = 0; i < expected.size() && failures < 10; ++i) {
    double v = decode(DataType::f16(), got[i]);
    double tol = std::ldexp(std::abs(expected[i]), -10) + slack;
    if (!(std::abs(v - expected[i]) <= tol)) {
      ADD_FAILURE() << "C[" << static_cast<int64_t>(i) / N << ", " << static_cast<int64_t>(i) % N
                    << "] = " << v << ", expected " << expected[i] << " (tolerance " << tol << ")";
      ++failures;
    }
  }
}

}  // namespace tilevm::example_test
