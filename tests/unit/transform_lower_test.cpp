// transform::lower (include/tilevm/transform/lower.h): the input is always verified, the passes run in their
// listed order and each one's program can be seen, and lowering a lowered program changes nothing.
#include <gtest/gtest.h>

#include <vector>

#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/printer.h"
#include "tilevm/support/error.h"
#include "transform_test_util.h"

namespace tilevm::transform {
namespace {

using testing::parse;
using testing::test_options;

constexpr const char* kSource = R"(def f<1>(f32* x_ptr):
    g = ViewGlobal(x_ptr, dtype=f32, shape=[32])
    a = LoadGlobal(g, spatial(32))
    s = AllocateShared(f32, shape=[32])
    StoreShared(a, s)
    b = Mul(a, a)
    c = Add(b, a)
    StoreGlobal(c, g)
)";

TEST(TransformLower, ThePassesInOrder) {
  EXPECT_EQ(lowering_passes(),
            (std::vector<std::string>{"infer_threads", "split_register_gemms", "infer_layouts",
                                      "pipeline_loops", "insert_barriers", "lower_parallel", "lower_tile_ops",
                                      "analyze_nan_payload", "plan_shared_memory"}));
  std::vector<std::string> seen;
  LowerOptions options = test_options();
  options.after_pass = [&](const std::string& pass, const ir::Program& p) {
    seen.push_back(pass);
    EXPECT_EQ(p.threads, 32) << pass;  // the first pass's result is visible to every later one
    EXPECT_EQ(p.shared_bytes.has_value(), pass == "plan_shared_memory") << pass;
  };
  const ir::Program lowered = lower(parse(kSource), options);
  EXPECT_EQ(seen, lowering_passes());
  EXPECT_EQ(ir::print_program(lowered),
            R"(def f<1>[threads=32](f32* x_ptr):  # shared memory: 128 bytes planned
    g = ViewGlobal(x_ptr, dtype=f32, shape=[32])
    a = LoadGlobal(g, spatial(32))
    s = AllocateShared(f32, shape=[32])  # shared [0, 128)
    StoreShared(a, s)
    b = Mul(a, a)  # nan payload unobserved
    c = Add(b, a)  # nan payload unobserved
    StoreGlobal(c, g)  # canonicalizes nan
)");
}

TEST(TransformLower, LoweringALoweredProgramChangesNothing) {
  const ir::Program once = lower(parse(kSource), test_options());
  const ir::Program twice = lower(once, test_options());
  EXPECT_TRUE(ir::same_nodes(twice.body, once.body));
  EXPECT_EQ(ir::print_program(twice), ir::print_program(once));
  // The emitter takes the lowered program and refuses the parsed one.
  EXPECT_NO_THROW(codegen::cuda::emit_cuda(once, {.target = target::Target::for_arch("sm_90")}));
  EXPECT_THROW(codegen::cuda::emit_cuda(parse(kSource), {.target = target::Target::for_arch("sm_90")}),
               Error);
}

// A lowered program printed and parsed again is an unlowered one: the recorded results are comments.
TEST(TransformLower, RecordedResultsPrintAsComments) {
  const ir::Program lowered = lower(parse(kSource), test_options());
  const ir::Program reparsed = parse(ir::print_program(lowered));
  EXPECT_EQ(reparsed.threads, 32);
  EXPECT_FALSE(reparsed.shared_bytes);
  EXPECT_EQ(ir::print_program(reparsed).find('#'), std::string::npos);
  EXPECT_EQ(ir::print_program(lower(reparsed, test_options())), ir::print_program(lowered));
}

constexpr const char* kInvalid = R"(def bad<1>[threads=32](f32* x_ptr):
    g = ViewGlobal(x_ptr, dtype=f32, shape=[32])
    a = LoadGlobal(g, spatial(64))
)";

TEST(TransformLower, TheInputIsAlwaysVerified) {
  Diagnostics diags;
  LowerOptions options{.verify_each_pass = false};
  bool ran = false;
  options.after_pass = [&](const std::string&, const ir::Program&) { ran = true; };
  EXPECT_FALSE(lower(parse(kInvalid), diags, options));
  EXPECT_FALSE(ran);
  ASSERT_EQ(diags.error_count(), 1);
  EXPECT_EQ(diags.all()[0].message, "layout has 64 threads but the program has 32");
  try {
    lower(parse(kInvalid), options);
    ADD_FAILURE() << "lowered an invalid program";
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "'bad' is not a valid program:\nbad:3:9: error: layout has 64 threads but the program has 32\n");
  }
}

}  // namespace
}  // namespace tilevm::transform
