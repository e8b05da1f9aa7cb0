// Golden tests of emitted CUDA: for each tests/golden/emit/NAME.tile, the lines of NAME.check must appear in
// the emitted source in order (as Triton's CHECK lines). Also the CExpr folding, the layout expressions
// against Layout::map, and the shared-memory planner.
#include <gtest/gtest.h>

#include "../../src/codegen/cuda/emitter.h"
#include "codegen_test_util.h"
#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/support/error.h"

namespace tilevm {
namespace {

TEST(CodegenEmit, GoldenChecks) {
  const auto dir = codegen_test::source_root() / "tests" / "golden" / "emit";
  int cases = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    // NAME.tile with NAME.check; a NAME.check alone checks examples/NAME.tile.
    std::filesystem::path tile = e.path();
    if (e.path().extension() == ".check" &&
        !std::filesystem::exists(std::filesystem::path(e.path()).replace_extension(".tile")))
      tile = codegen_test::source_root() / "examples" / e.path().filename().replace_extension(".tile");
    else if (e.path().extension() != ".tile")
      continue;
    SCOPED_TRACE(tile.filename().string());
    std::optional<ir::Program> p = codegen_test::load_program(tile);
    ASSERT_TRUE(p) << "does not verify";
    std::string source;
    try {
      source = codegen::cuda::emit_cuda(*p, {.target = target::Target::for_arch("sm_90")}).source;
    } catch (const Error& error) {
      // setmaxnreg (a region's registers=) needs sm_90a.
      if (std::string(error.what()).find("arch-specific target sm_90a") == std::string::npos) throw;
      source = codegen::cuda::emit_cuda(*p, {.target = target::Target::for_arch("sm_90a")}).source;
    }
    std::istringstream checks(
        codegen_test::read_text(std::filesystem::path(e.path()).replace_extension(".check")));
    size_t at = 0;
    int lines = 0;
    for (std::string line; std::getline(checks, line);) {
      if (line.empty()) continue;
      ++lines;
      const size_t found = source.find(line, at);
      EXPECT_NE(found, std::string::npos) << "CHECK not found (after offset " << at << "): " << line;
      if (found != std::string::npos) at = found + line.size();
    }
    EXPECT_GT(lines, 0) << "an empty or missing .check file checks nothing";
    ++cases;
  }
  EXPECT_GE(cases, 3);
}

TEST(CodegenEmit, CExprFolds) {
  using namespace codegen::cuda;
  EXPECT_EQ((cconst(3) * cconst(4) + cconst(1)).value, 13);
  EXPECT_EQ((cvar("t") * cconst(1) + cconst(0)).text, "t");
  EXPECT_EQ((cvar("t") % cconst(1)).value, 0);
  EXPECT_EQ((cconst(0) / cvar("t")).value, 0);
  EXPECT_EQ(((cvar("t") / cconst(4)) % cconst(8)).text, "((t / 4) % 8)");
}

// The emitted index expressions, evaluated by a tiny interpreter of the same arithmetic, match Layout::map:
// checked here on constant (t, i), where the folding must produce the number itself.
TEST(CodegenEmit, LayoutExpressionsMatchMap) {
  using namespace codegen::cuda;
  for (const char* text :
       {"local(2, 1).spatial(8, 4).local(1, 2)", "column_local(2, 2).spatial(8, 4).local(1, 2)",
        "reduce(spatial(1, 1, 4), dims=[2]).local(1, 4).column_local(2, 2).spatial(8, 4).local(1, 2)",
        "local(3, 1, 1).swizzle(local(16, 32), dim=1).local(1, 8)",
        "local(1, 2).swizzle(local(16, 4), dim=1, log_step=1).local(1, 8)",
        "spatial(4).local(3).spatial(32)"}) {
    SCOPED_TRACE(text);
    const layout::Layout f = layout::parse_layout(text);
    for (int64_t t = 0; t < f.num_threads(); t += 7) {
      for (int64_t i = 0; i < f.num_locals(); i += 3) {
        const std::vector<CExpr> idx = layout_index(f, cconst(t), cconst(i));
        const layout::Index want = f.map(t, i);
        for (size_t d = 0; d < want.size(); ++d) {
          ASSERT_TRUE(idx[d].value) << idx[d].text;
          EXPECT_EQ(*idx[d].value, want[d]);
        }
        if (f.num_threads() == 1) {
          const CExpr off = layout_offset(f, idx);
          ASSERT_TRUE(off.value);
          EXPECT_EQ(*off.value, i);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tilevm
