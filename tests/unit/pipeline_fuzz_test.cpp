// Malformed programs of every kind get diagnostics, never a crash: the examples are mutated word by word
// (a name, number or operator replaced by another one from the same file, a line dropped or duplicated) and
// each mutant goes through the parser, the verifier and, when it verifies, one block of the interpreter.
// Nothing may throw; every failure must be a located diagnostic.
#include <filesystem>
#include <random>
#include <regex>

#include <gtest/gtest.h>

#include "example_util.h"
#include "sanitized.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/verifier.h"

namespace tilevm {
namespace {

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> out;
  std::regex word(R"([A-Za-z_][A-Za-z_0-9]*|[0-9]+|[-+*/%<>=.,:\[\]()])");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), word); it != std::sregex_iterator(); ++it) {
    out.push_back(it->str());
  }
  return out;
}

std::string mutate(const std::string& text, const std::vector<std::string>& vocabulary, std::mt19937& rng) {
  std::string out = text;
  int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits; ++e) {
    std::vector<std::string> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    if (lines.empty()) break;
    size_t k = rng() % lines.size();
    switch (rng() % 4) {
      case 0:
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(k));
        break;
      case 1:
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(k), lines[rng() % lines.size()]);
        break;
      default: {  // replace one word of the line by another word of the file
        std::vector<std::string> w = words_of(lines[k]);
        if (w.empty()) break;
        const std::string& victim = w[rng() % w.size()];
        size_t at = lines[k].find(victim);
        lines[k].replace(at, victim.size(), vocabulary[rng() % vocabulary.size()]);
        break;
      }
    }
    out.clear();
    for (const std::string& l : lines) out += l + "\n";
  }
  return out;
}

TEST(PipelineFuzz, MutatedExamplesGetDiagnosticsNotCrashes) {
  std::vector<std::string> sources;
  for (const auto& entry : std::filesystem::directory_iterator(example_test::example_path(""))) {
    if (entry.path().extension() == ".tile") sources.push_back(example_test::read_text(entry.path()));
  }
  ASSERT_GE(sources.size(), 4u);
  std::mt19937 rng(20261121);
  int parsed = 0, verified = 0, ran = 0, iterations = 0;
  // Under AddressSanitizer (scripts/test-sanitizers.sh) the interpreter runs some 12 times slower and 1500
  // mutants took 426 s of CTest's 600; 300 keep every stage reached there.
  const int kMutants = test::under_asan(300, 1500);
  for (; iterations < kMutants; ++iterations) {
    const std::string& seed = sources[rng() % sources.size()];
    std::string text = mutate(seed, words_of(seed), rng);
    Diagnostics diags;
    std::optional<ir::Program> program;
    ASSERT_NO_THROW(program = ir::parse_program(text, diags)) << text;
    for (const Diagnostic& d : diags.all())
      EXPECT_TRUE(d.loc.known() || !program) << d.message << "\n" << text;
    if (!program) {
      EXPECT_TRUE(diags.has_errors()) << text;
      continue;
    }
    ++parsed;
    bool ok = false;
    ASSERT_NO_THROW(ok = ir::verify_program(*program, diags)) << text;
    if (!ok) continue;
    ASSERT_NO_THROW(program = transform::lower(*program, diags, {.verify_each_pass = true})) << text;
    // Lowering may still refuse a verified program with a located error: the shared memory its plan keeps
    // live at once past the block's limit (a mutation that allocates a large TMA stage twice).
    if (!program) {
      EXPECT_TRUE(diags.has_errors()) << text;
      for (const Diagnostic& d : diags.all()) EXPECT_TRUE(d.loc.known()) << d.message << "\n" << text;
      continue;
    }
    ++verified;
    // One block with generous zeroed buffers: out-of-buffer accesses must be diagnostics too.
    std::map<std::string, std::vector<uint8_t>> storage;
    interp::Arguments args;
    for (const ir::Var& p : program->params) {
      if (p->type.is_pointer()) {
        storage[p->name].assign(1 << 16, 0);
        args.buffers[p->name] = &storage[p->name];
      } else {
        args.scalars[p->name] = interp::ScalarValue{false, 16, 0.0};
      }
    }
    interp::RunOptions options;
    options.num_blocks = 1;
    Diagnostics run_diags;
    ASSERT_NO_THROW(interp::run_program(*program, args, run_diags, options)) << text;
    for (const Diagnostic& d : run_diags.all()) EXPECT_TRUE(d.loc.known()) << d.message << "\n" << text;
    ++ran;
  }
  // The mutations must reach every stage, or the test checks little.
  EXPECT_GT(parsed, iterations / 10);
  EXPECT_GT(verified, 10);
  EXPECT_GT(ran, 10);
  std::cout << iterations << " mutants: " << parsed << " parsed, " << verified << " verified, " << ran
            << " ran\n";
}

}  // namespace
}  // namespace tilevm
