// Compiling the corpus's cases with the library (corpus.h): the emitted source and what the emitter decided.
#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "corpus.h"
#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ops/qmatmul/config_space.h"
#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/ops/qmatmul/qmatmul_template.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/support/error.h"
#include "tilevm/target/target.h"
#include "tilevm/transform/lower.h"
#include "tilevm/tune/cost_model.h"

namespace tilevm::corpus {
namespace {

// The arch every corpus program is emitted for, with the H100's limits.
const target::Target& corpus_target() {
  static const target::Target target = target::Target::for_arch("sm_90");
  return target;
}

std::string describe(const codegen::cuda::EmittedKernel& k) {
  std::string text = k.source;
  text +=
      fmt::format("\n// kernel {} threads {} shared {}\n", k.kernel_name, k.threads, k.dynamic_shared_bytes);
  for (const auto& w : k.workspace) text += fmt::format("// workspace {}\n", w.name);
  for (const std::string& s : k.selections) text += "// selected " + s + "\n";
  return text;
}

// Lowers (as the CLI and compile_program do: the input is verified first) and emits; an error's message is
// the entry's text.
std::string compile(ir::Program program) {
  try {
    Diagnostics diags;
    const std::optional<ir::Program> lowered =
        transform::lower(std::move(program), diags, {.target = corpus_target()});
    if (!lowered) return "verify error:\n" + diags.render("<corpus>", "");
    try {
      return describe(codegen::cuda::emit_cuda(*lowered, {.target = corpus_target()}));
    } catch (const Error& e) {
      // A program that needs sm_90a (setmaxnreg: warp-specialized regions with registers=) is emitted for
      // it, so that its code is in the corpus too.
      if (std::string(e.what()).find("arch-specific target sm_90a") == std::string::npos) throw;
      static const target::Target sm90a = target::Target::for_arch("sm_90a");
      return describe(codegen::cuda::emit_cuda(*lowered, {.target = sm90a}));
    }
  } catch (const Error& e) {
    return std::string("emit error: ") + e.what();
  }
}

// A problem and which of its configurations to emit: every one, or every stride-th (in the space's order)
// where a whole space would make the corpus too slow to run (a few thousand programs is minutes on two
// cores). Sampled or not, every configuration the tuner can pick for the problem on the H100 and the H200
// is emitted too: the ones its cost model keeps for timing (tune::prune, default_keep_after_model).
struct Problem {
  ops::QMatmulProblem problem;
  size_t stride = 1;
};

std::vector<Problem> problems() {
  std::vector<Problem> out;
  const auto add = [&](size_t stride, int64_t m, int64_t k, int64_t n, DataType atype, DataType wtype,
                       int64_t group, bool zero) {
    ops::QMatmulProblem p;
    p.m = m, p.k = k, p.n = n, p.atype = atype, p.wtype = wtype, p.group = group, p.zero_point = zero;
    out.push_back({p, stride});
  };
  // The benchmark's largest decode layer at M = 1 and 16 and a prefill layer, every configuration.
  for (int64_t m : {1, 16}) add(1, m, 8192, 57344, DataType::f16(), DataType::uint(4), 128, false);
  add(1, 4096, 8192, 8192, DataType::f16(), DataType::uint(4), 128, false);
  // The benchmark's dtype sweep, every weight type of 1 to 8 bits, a sample of each space.
  std::vector<DataType> types;
  for (int bits = 1; bits <= 8; ++bits) types.push_back(DataType::uint(bits));
  for (int bits = 1; bits <= 8; ++bits) types.push_back(DataType::int_(bits));
  for (int bits = 3; bits <= 8; ++bits)
    for (int e = 1; e <= bits - 2; ++e) types.push_back(DataType::float_(e, bits - 1 - e));
  for (DataType t : types) add(23, 16, 8192, 57344, DataType::f16(), t, 128, false);
  // Every variant of the template on small odd shapes, a sample of each space: bf16, zero points, groups 32
  // and per channel, the swapped form (M <= 8), warps along K, split-K, and unquantized weights.
  for (DataType a : {DataType::f16(), DataType::bf16()}) {
    for (DataType w : {DataType::uint(4), DataType::int_(3), DataType::uint(8), DataType::float_(3, 2),
                       DataType::float_(5, 2), DataType::uint(1)}) {
      for (int64_t group : {32, 1024}) {
        for (bool zero : {false, true}) {
          if (zero && (!w.is_integer() || w.is_signed())) continue;
          add(11, 3, 1024, 1000, a, w, group, zero);
          add(13, 40, 1024, 768, a, w, group, zero);
        }
      }
    }
    add(3, 8, 4096, 4096, a, a, 4096, false);
  }
  return out;
}

// Runs `jobs` on every core and hands their results to `sink` in order.
void run_in_order(const std::vector<std::pair<std::string, std::function<std::string()>>>& jobs,
                  const Sink& sink) {
  std::vector<std::string> results(jobs.size());
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i; (i = next++) < jobs.size();) results[i] = jobs[i].second();
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < std::max(1u, std::thread::hardware_concurrency()); ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < jobs.size(); ++i) sink(jobs[i].first, results[i]);
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
    sink(name, compile(std::move(*program)));
  }
}

void emit_qmatmul_cases(const Sink& sink) {
  std::vector<std::pair<std::string, std::function<std::string()>>> jobs;
  const auto guarded = [](std::function<ir::Program()> build) {
    return [build] {
      try {
        return compile(build());
      } catch (const Error& e) {
        return std::string("build error: ") + e.what();
      }
    };
  };
  for (const Problem& p : problems()) {
    const ops::QMatmulProblem problem = p.problem;
    const std::string key = problem.key();
    std::vector<ops::QMatmulConfig> space;
    try {
      space = ops::qmatmul_config_space(problem);
    } catch (const Error& e) {
      sink("qmatmul:" + key, std::string("space error: ") + e.what());
      continue;
    }
    std::set<size_t> chosen;
    for (size_t i = 0; i < space.size(); i += p.stride) chosen.insert(i);
    if (p.stride > 1) {
      for (const target::Target& target : {target::Target::h100_sxm(), target::Target::h200()}) {
        const ops::QMatmulTemplate kernel;
        const std::vector<ops::QMatmulConfig> tuner_space = kernel.space(problem, target);
        for (const ops::QMatmulConfig& kept : tune::prune(kernel, problem, tuner_space, target,
                                                          tune::default_keep_after_model(tuner_space.size())))
          for (size_t i = 0; i < space.size(); ++i)
            if (space[i].name() == kept.name()) chosen.insert(i);
      }
    }
    for (size_t i : chosen) {
      const ops::QMatmulConfig config = space[i];
      const std::string name = "qmatmul:" + key + "/" + config.name() + "/";
      if (config.dequant_gemm) {
        jobs.emplace_back(name + "copy", guarded([=] { return ops::build_qmatmul_copy(problem); }));
        jobs.emplace_back(name + "dequantize", guarded([=] { return ops::build_dequantize(problem); }));
        continue;
      }
      jobs.emplace_back(name + "transform",
                        guarded([=] { return ops::build_qmatmul_transform(problem, config); }));
      jobs.emplace_back(name + "matmul", guarded([=] { return ops::build_qmatmul(problem, config); }));
    }
  }
  run_in_order(jobs, sink);
}

}  // namespace tilevm::corpus
