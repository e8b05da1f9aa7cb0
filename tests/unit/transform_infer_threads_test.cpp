// transform::infer_threads (include/tilevm/transform/infer_threads.h): the thread count comes from the
// first register layout, wherever it is, and a header's count is kept.
#include <gtest/gtest.h>

#include "tilevm/ir/printer.h"
#include "tilevm/ir/verifier.h"
#include "tilevm/transform/infer_threads.h"
#include "transform_test_util.h"

namespace tilevm::transform {
namespace {

using testing::parse;

TEST(TransformInferThreads, TakesTheCountOfTheRegisterLayouts) {
  const ir::Program p = parse(R"(def f<1>(f32* x_ptr):
    g = ViewGlobal(x_ptr, dtype=f32, shape=[64])
    a = LoadGlobal(g, local(2).spatial(32))
    StoreGlobal(a, g)
)");
  EXPECT_EQ(p.threads, 0);
  Diagnostics diags;
  EXPECT_TRUE(ir::verify_program(p, diags));
  EXPECT_EQ(p.threads, 0);  // verifying writes nothing
  const ir::Program q = infer_threads(p);
  EXPECT_EQ(q.threads, 32);
  EXPECT_EQ(ir::print_program(q).find("def f<1>[threads=32](f32* x_ptr):"), 0u);
  EXPECT_TRUE(ir::same_nodes(q.body, p.body));
}

TEST(TransformInferThreads, FindsALayoutInsideLoopsAndBranches) {
  const ir::Program p = parse(R"(def f<1>(f32* x_ptr, i32 n):
    g = ViewGlobal(x_ptr, dtype=f32, shape=[64])
    for k in range(n):
        if k > 2:
            a = AllocateRegister(f32, layout=spatial(4, 16), init=1.0)
            StoreGlobal(a, g)
)");
  EXPECT_EQ(infer_threads(p).threads, 64);
}

TEST(TransformInferThreads, KeepsTheHeadersCount) {
  ir::Program p = parse(R"(def f<1>[threads=8](i32 n):
    Print(n)
)");
  EXPECT_EQ(infer_threads(p).threads, 8);
}

}  // namespace
}  // namespace tilevm::transform
