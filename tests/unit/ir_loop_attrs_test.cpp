// Loop attributes (ForStmt::attrs, docs/language.md "Loop attributes"): parsed, printed, built, checked,
// and ignored by the code generator.
#include <gtest/gtest.h>

#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/builder.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/printer.h"
#include "tilevm/ir/verifier.h"
#include "tilevm/support/error.h"
#include "tilevm/transform/lower.h"

namespace tilevm::ir {
namespace {

std::string loop_program(const std::string& range) {
  return "def f<1>[threads=32](f32* x_ptr, i32 n):\n"
         "    g = ViewGlobal(x_ptr, dtype=f32, shape=[n])\n"
         "    acc = AllocateRegister(f32, layout=spatial(32), init=0.0)\n"
         "    for k in range(" +
         range +
         "):\n"
         "        a = LoadGlobal(g, spatial(32), offset=[k])\n"
         "        Add(acc, a, out=acc)\n"
         "    StoreGlobal(acc, g)\n";
}

std::optional<Program> parse(const std::string& source, std::string* errors = nullptr) {
  Diagnostics diags;
  std::optional<Program> p = parse_program(source, diags);
  if (errors) *errors = diags.render("f.tile", "");
  if (diags.has_errors()) return std::nullopt;
  return p;
}

const ForStmt& loop_of(const Program& p) {
  return *p.body[2]->as<ForStmt>();
}

TEST(IrLoopAttrs, ParsedAndPrintedCanonically) {
  struct Case {
    const char* written;
    LoopAttrs attrs;
    const char* printed;
  };
  const Case cases[] = {
      {"0, n, 32", {}, "0, n, 32"},
      {"0, n, 32, unroll=4", {.unroll = 4}, "0, n, 32, unroll=4"},
      {"n, stages=3, unroll=2", {.unroll = 2, .stages = 3}, "n, unroll=2, stages=3"},
      {"n, unroll=True", {.unroll = LoopAttrs::kFullUnroll}, "n, unroll=True"},
      {"0, n, unroll=False, stages=1", {}, "n"},
      {"n, stages=2 * 2", {.stages = 4}, "n, stages=4"},
      {"n, tma=True, stages=3", {.stages = 3, .tma = true}, "n, stages=3, tma=True"},
      {"n, tma=False", {}, "n"},
      {"n, warp_specialize=True, tma=True, stages=3",
       {.stages = 3, .tma = true, .warp_specialize = true},
       "n, stages=3, tma=True, warp_specialize=True"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.written);
    std::string errors;
    const std::optional<Program> p = parse(loop_program(c.written), &errors);
    ASSERT_TRUE(p) << errors;
    EXPECT_EQ(loop_of(*p).attrs, c.attrs);
    const std::string text = print_program(*p);
    EXPECT_NE(text.find(std::string("for k in range(") + c.printed + "):"), std::string::npos) << text;
    const std::optional<Program> again = parse(text);
    ASSERT_TRUE(again);
    EXPECT_EQ(print_program(*again), text);
  }
}

TEST(IrLoopAttrs, BadAttributesAreParseErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"n, unrol=2",
       "range takes the keyword arguments unroll=, stages=, tma= and warp_specialize=, not unrol="},
      {"n, unroll=0", "unroll=0 is out of range: 1 to 1024"},
      {"n, stages=n", "stages= must be an integer constant, got n"},
      {"n, unroll=1.5", "unroll= must be an integer constant or True, got 1.5"},
      {"n, unroll=2, unroll=2", "unroll= is given twice"},
      {"n, tma=1", "tma= must be True or False, got 1"},
      {"n, warp_specialize=2", "warp_specialize= must be True or False, got 2"},
      {"unroll=2", "range takes 1 to 3 arguments, got 0"},
  };
  for (const auto& [written, message] : cases) {
    SCOPED_TRACE(written);
    std::string errors;
    EXPECT_FALSE(parse(loop_program(written), &errors));
    EXPECT_NE(errors.find(message), std::string::npos) << errors;
  }
}

TEST(IrLoopAttrs, BuiltLikeParsed) {
  ProgramBuilder b("f");
  Pointer x = b.pointer_param("x_ptr", DataType::f32());
  Scalar n = b.scalar_param("n", DataType::i32());
  b.grid({1});
  b.threads(32);
  Tensor g = b.view_global("g", x, DataType::f32(), {n});
  Tensor acc = b.allocate_register("acc", DataType::f32(), "spatial(32)", 0.0);
  b.for_range("k", 0, n, 1, {.unroll = 2, .stages = 3}, [&](Scalar k) {
    Tensor a = b.load_global("a", g, "spatial(32)", {k});
    b.add(out(acc), acc, a);
  });
  b.store_global(acc, g);
  const Program built = b.build();
  EXPECT_EQ(loop_of(built).attrs, (LoopAttrs{.unroll = 2, .stages = 3}));
  EXPECT_NE(print_program(built).find("for k in range(n, unroll=2, stages=3):"), std::string::npos);
  EXPECT_THROW(b.for_range("j", 0, n, 1, {.stages = 0}, [](Scalar) {}), Error);
}

TEST(IrLoopAttrs, TheVerifierChecksHandBuiltAttributes) {
  Program p = *parse(loop_program("n"));
  const ForStmt& f = loop_of(p);
  p.body[2] = std::make_shared<ForStmt>(f.var, f.start, f.stop, f.step, f.body, f.loc,
                                        LoopAttrs{.unroll = -1, .stages = 0});
  Diagnostics diags;
  EXPECT_FALSE(verify_program(p, diags));
  ASSERT_EQ(diags.error_count(), 2);
  EXPECT_EQ(diags.all()[0].message, "unroll=-1 must not be negative");
  EXPECT_EQ(diags.all()[1].message, "stages=0 must be at least 1");
}

// The code generator does not use the attributes yet: they change no emitted line.
TEST(IrLoopAttrs, TheEmittedCudaIgnoresThem) {
  const auto emit = [](const std::string& range) {
    return codegen::cuda::emit_cuda(transform::lower(*parse(loop_program(range)), {.verify_each_pass = true}),
                                    {.target = target::Target::for_arch("sm_90")})
        .source;
  };
  EXPECT_EQ(emit("0, n, 32, unroll=4, stages=3"), emit("0, n, 32"));
  EXPECT_EQ(emit("n, unroll=True"), emit("n"));
}

}  // namespace
}  // namespace tilevm::ir
