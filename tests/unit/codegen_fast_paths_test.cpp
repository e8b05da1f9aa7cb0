// The checks the emitter proves away, on the emitted text: CopyAsync's block-uniform fast path (taken for
// interior aligned tiles, the checked loop kept for the rest), and shared vector accesses whose alignment
// the divisibility analysis proves (no test, no fallback). tests/golden/emit/fast_paths.tile holds one case
// of each, and the cases that must stay checked; the quantized matmul's main loop is the one that matters.
// Both paths are compiled by NVRTC. (On a GPU, CodegenGpu.InterpreterAndGpuAgree runs fast_paths.tile with
// arguments that take both paths and compares it with the interpreter.)
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "codegen_test_util.h"
#include "qmatmul_test_util.h"
#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/runtime/nvrtc.h"

namespace tilevm {
namespace {

const char* const kFast = "tv_cp_async_shared<";  // the fast path's copy
const char* const kChecked = "const bool first_in";

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// The emitted code of each `inst` instruction: from its `// line N: [results = ]inst` comment to the next.
std::vector<std::string> instruction_blocks(const std::string& source, const std::string& inst) {
  std::vector<std::string> out;
  const std::string marker = "// line ";
  for (size_t at = source.find(marker); at != std::string::npos;) {
    const size_t next = source.find(marker, at + 1);
    const std::string block = source.substr(at, next == std::string::npos ? std::string::npos : next - at);
    const std::string head = block.substr(0, block.find('\n'));  // `// line 3: a = LoadShared`
    if (head.size() > inst.size() &&
        head.compare(head.size() - inst.size() - 1, std::string::npos, " " + inst) == 0)
      out.push_back(block);
    at = next;
  }
  return out;
}

std::filesystem::path tile_path() {
  return codegen_test::source_root() / "tests" / "golden" / "emit" / "fast_paths.tile";
}

// The emitted code of the instruction on the line of fast_paths.tile that contains `statement`.
std::string block_of(const std::string& source, const std::string& statement) {
  std::istringstream tile(codegen_test::read_text(tile_path()));
  int line = 1;
  for (std::string text; std::getline(tile, text) && text.find(statement) == std::string::npos;) ++line;
  const std::string marker = "// line " + std::to_string(line) + ": ";
  const size_t at = source.find(marker);
  if (at == std::string::npos) return "";
  const size_t next = source.find("// line ", at + 1);
  return source.substr(at, next == std::string::npos ? std::string::npos : next - at);
}

codegen::cuda::EmittedKernel emit_fast_paths_tile() {
  const auto p = codegen_test::load_program(tile_path());
  if (!p) ADD_FAILURE() << "fast_paths.tile does not verify";
  return p ? codegen::cuda::emit_cuda(*p, {.target = target::Target::for_arch("sm_90")})
           : codegen::cuda::EmittedKernel{};
}

codegen::cuda::EmittedKernel emit_qmatmul() {
  const ops::QMatmulProblem p = ops::make_problem(16, 8192, 8192, DataType::uint(4), 128);
  const ir::Program program =
      ops::build_qmatmul(p, ops::QMatmulConfig::parse("bm16_bn256_bk128_sk128_w1x8_s4_k8"));
  return codegen::cuda::emit_cuda(
      transform::lower(program, {.target = target::Target::for_arch("sm_90a"), .verify_each_pass = true}),
      {.target = target::Target::for_arch("sm_90a")});
}

TEST(CodegenFastPaths, CopyAsyncOfAnInteriorAlignedTileIsUnchecked) {
  const std::string source = emit_fast_paths_tile().source;
  // A runtime row stride: checked once, before the loop; the fast loop steps by whole rows.
  const std::string a = block_of(source, "CopyAsync(sa[s]");
  ASSERT_TRUE(has(a, "CopyAsync")) << a;
  EXPECT_TRUE(has(a, "ga_stride0 % 8 == 0")) << a;
  EXPECT_TRUE(has(a, "tv_cp_async_shared<16>((dp + (k * 1024)), (sp + (k * ")) << a;
  EXPECT_TRUE(has(a, kChecked)) << a;
  EXPECT_LT(a.find(kFast), a.find("} else {")) << "the checked loop is the else branch of the fast path";
  EXPECT_LT(a.find("} else {"), a.find(kChecked));
  // A constant row stride of 20 elements is not a multiple of the 8-element chunk: checked only.
  const std::string b = block_of(source, "CopyAsync(sb");
  EXPECT_FALSE(has(b, kFast)) << b;
  EXPECT_TRUE(has(b, kChecked)) << b;
  // u4: the fast path needs the strides in 32-element chunks; the checked path also needs a whole byte.
  const std::string q = block_of(source, "CopyAsync(sq");
  EXPECT_TRUE(has(q, "gq_stride0 % 32 == 0")) << q;
  EXPECT_TRUE(has(q, "tv_cp_async_shared<16>(dp_2, sp_2);")) << q;
  // Its rows (8 of m) may reach past g: the ragged path zero-fills those chunks.
  EXPECT_TRUE(has(q,
                  "tv_cp_async_shared_fill<16>(dp_3, in ? (const void*)(sp_3) : (const "
                  "void*)(((tv_u8*)q_ptr)), in ? 16 : 0);"))
      << q;
  EXPECT_TRUE(has(q, "soff % 2 == 0 && ")) << q;
  EXPECT_TRUE(has(q, kChecked)) << q;
  // The helper is defined once.
  const std::string helper = "TV_INLINE void tv_cp_async_shared(";
  ASSERT_TRUE(has(source, helper));
  EXPECT_EQ(source.find(helper), source.rfind(helper));
}

TEST(CodegenFastPaths, ProvenSharedAccessesHaveNoTestAndNoFallback) {
  const std::string source = emit_fast_paths_tile().source;
  const std::string load = block_of(source, "a = LoadShared"), store = block_of(source, "StoreShared(");
  for (const std::string& block : {load, store}) {
    EXPECT_TRUE(has(block, "aligned by construction")) << block;
    EXPECT_FALSE(has(block, "if (")) << block;
    EXPECT_FALSE(has(block, "tv_ld<") || has(block, "tv_st<")) << block;
  }
  // At a runtime column offset nothing is proven.
  const std::string runtime = block_of(source, "c = LoadShared");
  EXPECT_TRUE(has(runtime, "if ((off % 8 == 0) && ")) << runtime;
  EXPECT_TRUE(has(runtime, "tv_ld<16>")) << runtime;
  // Global memory keeps its address and bounds checks; only the proven offset test goes.
  const std::string global = block_of(source, "StoreGlobal(");
  EXPECT_TRUE(has(global, "% 16 == 0)")) << global;
  EXPECT_FALSE(has(global, "(off % 8 == 0)")) << global;
  EXPECT_TRUE(has(global, "tv_st<16>")) << global;
}

TEST(CodegenFastPaths, QMatmulMainLoopIsUncheckedForInteriorTiles) {
  const std::string source = emit_qmatmul().source;
  // (The template may change: whatever copies and shared loads it has, all of them qualify.)
  const std::vector<std::string> copies = instruction_blocks(source, "CopyAsync");
  EXPECT_GE(copies.size(), 2u);  // in the prologue and in the loop
  for (const std::string& c : copies) {
    EXPECT_TRUE(has(c, kFast)) << c;
    EXPECT_TRUE(has(c, kChecked)) << c;
  }
  const std::vector<std::string> loads = instruction_blocks(source, "LoadShared");
  ASSERT_FALSE(loads.empty());
  for (const std::string& l : loads) {
    EXPECT_TRUE(has(l, "by construction")) << l;
    EXPECT_FALSE(has(l, "if (")) << l;
  }
}

TEST(CodegenFastPaths, BothPathsCompileWithNvrtc) {
  if (!runtime::nvrtc_available()) GTEST_SKIP() << "no NVRTC";
  const auto p = codegen_test::load_program(tile_path());
  ASSERT_TRUE(p);
  for (const char* arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    const codegen::cuda::EmittedKernel k =
        codegen::cuda::emit_cuda(*p, {.target = target::Target::for_arch(arch)});
    ASSERT_TRUE(has(k.source, kFast) && has(k.source, kChecked));
    EXPECT_GT(runtime::compile_cuda(k.source, k.kernel_name + ".cu", {.arch = arch}).cubin.size(), 4u);
  }
  const codegen::cuda::EmittedKernel qm = emit_qmatmul();
  EXPECT_GT(runtime::compile_cuda(qm.source, qm.kernel_name + ".cu", {.arch = "sm_90a"}).cubin.size(), 4u);
}

}  // namespace
}  // namespace tilevm
