// Compiling the corpus's cases with the library (corpus.h): the emitted source and what the emitter decided.
#include <fmt/format.h>

#include "corpus.h"
#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/verifier.h"
#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/support/error.h"
#include "tilevm/ops/qmatmul/config_space.h"

namespace tilevm::corpus {
namespace {

constexpr const char* kArch = "sm_90";

std::string describe(const codegen::cuda::EmittedKernel& k) {
  std::string text = k.source;
  text += fmt::format("\n// kernel {} threads {} shared {}\n", k.kernel_name, k.threads, k.dynamic_shared_bytes);
  for (const auto& w : k.workspace) text += fmt::format("// workspace {}\n", w.name);
  for (const std::string& s : k.selections) text += "// selected " + s + "\n";
  return text;
}

// Verifies (as the CLI does) and emits; an error's message is the entry's text.
std::string compile(ir::Program program, bool verify) {
  try {
    if (verify) {
      Diagnostics diags;
      if (!ir::verify_program(program, diags)) return "verify error:\n" + diags.render("<corpus>", "");
    }
    return describe(codegen::cuda::emit_cuda(program, {.arch = kArch}));
  } catch (const Error& e) {
    return std::string("emit error: ") + e.what();
  }
}

std::vector<ops::QMatmulProblem> problems() {
  std::vector<ops::QMatmulProblem> out;
  const auto add = [&](int64_t m, int64_t k, int64_t n, DataType atype, DataType wtype, int64_t group, bool zero) {
    ops::QMatmulProblem p;
    p.m = m, p.k = k, p.n = n, p.atype = atype, p.wtype = wtype, p.group = group, p.zero_point = zero;
    out.push_back(p);
  };
  // The benchmark's decode and prefill layers (u4, group 128) and its dtype sweep.
  for (auto [k, n] : {std::pair<int64_t, int64_t>{8192, 10240}, {8192, 8192}, {8192, 57344}, {28672, 8192}})
    for (int64_t m : {1, 16, 4096}) add(m, k, n, DataType::f16(), DataType::uint(4), 128, false);
  std::vector<DataType> types;
  for (int bits = 1; bits <= 8; ++bits) types.push_back(DataType::uint(bits));
  for (int bits = 1; bits <= 8; ++bits) types.push_back(DataType::int_(bits));
  for (int bits = 3; bits <= 8; ++bits)
    for (int e = 1; e <= bits - 2; ++e) types.push_back(DataType::float_(e, bits - 1 - e));
  for (DataType t : types) add(16, 8192, 57344, DataType::f16(), t, 128, false);
  // Every variant of the template on small odd shapes: bf16, zero points, groups 32/64 and per channel, the
  // swapped form (M <= 8), warps along K, split-K, and unquantized weights.
  for (DataType a : {DataType::f16(), DataType::bf16()}) {
    for (DataType w : {DataType::uint(4), DataType::int_(3), DataType::uint(8), DataType::float_(3, 2),
                       DataType::float_(5, 2), DataType::uint(1)}) {
      for (int64_t group : {32, 128, 1024}) {
        for (bool zero : {false, true}) {
          if (zero && (!w.is_integer() || w.is_signed())) continue;
          add(3, 1024, 1000, a, w, group, zero);
          add(40, 1024, 768, a, w, group, zero);
        }
      }
    }
    add(8, 4096, 4096, a, a, 4096, false);
  }
  return out;
}

}  // namespace

void emit_tile_cases(const std::vector<TileCase>& cases, const Sink& sink) {
  for (const TileCase& c : cases) {
    std::string name = "tile:" + c.path;
    ir::ParseOptions options;
    for (const auto& [k, v] : c.defines) {
      name += fmt::format(" -D {}={}", k, v);
      options.defines[k] = v;
    }
    Diagnostics diags;
    std::optional<ir::Program> program = ir::parse_program(c.source, diags, options);
    if (!program || diags.has_errors()) {
      sink(name, "parse error:\n" + diags.render(c.path, c.source));
      continue;
    }
    sink(name, compile(std::move(*program), true));
  }
}

void emit_qmatmul_cases(const Sink& sink) {
  for (const ops::QMatmulProblem& problem : problems()) {
    const std::string key = problem.key();
    std::vector<ops::QMatmulConfig> space;
    try {
      space = ops::qmatmul_config_space(problem);
    } catch (const Error& e) {
      sink("qmatmul:" + key, std::string("space error: ") + e.what());
      continue;
    }
    for (const ops::QMatmulConfig& config : space) {
      const std::string name = "qmatmul:" + key + "/" + config.name();
      const auto entry = [&](const char* part, auto build) {
        std::string text;
        try {
          text = compile(build(), false);
        } catch (const Error& e) {
          text = std::string("build error: ") + e.what();
        }
        sink(name + "/" + part, text);
      };
      if (config.dequant_gemm) {
        entry("copy", [&] { return ops::build_qmatmul_copy(problem); });
        entry("dequantize", [&] { return ops::build_dequantize(problem); });
        continue;
      }
      entry("transform", [&] { return ops::build_qmatmul_transform(problem, config); });
      entry("matmul", [&] { return ops::build_qmatmul(problem, config); });
      if (config.split_k > 1) entry("reduce", [&] { return ops::build_qmatmul_reduce(problem, config); });
    }
  }
}

}  // namespace tilevm::corpus
