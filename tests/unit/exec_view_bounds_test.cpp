// The GPU runner's launch-time check of views against their buffers (exec/view_bounds.h), which needs no
// GPU: views that leave the buffer are errors at the ViewGlobal, views the host cannot evaluate are left
// to the interpreter, and no program that the GPU differential test runs is refused by it.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "codegen_test_util.h"
#include "tilevm/exec/view_bounds.h"
#include "tilevm/ir/parser.h"

namespace tilevm::exec {
namespace {

std::string check(const std::string& source, size_t bytes, std::map<std::string, int64_t> scalars = {}) {
  Diagnostics diags;
  std::optional<ir::Program> p = ir::parse_program(source, diags);
  EXPECT_TRUE(p && !diags.has_errors()) << diags.render("test.tile", source);
  std::vector<uint8_t> buffer(bytes);
  interp::Arguments args;
  args.buffers["x_ptr"] = &buffer;
  for (const auto& [name, v] : scalars) args.scalars[name] = interp::ScalarValue{false, v, 0.0};
  const bool ok = check_views_in_buffers(*p, args, diags);
  std::string out;
  for (const Diagnostic& d : diags.all()) out += fmt::format("{}:{}: {}\n", d.loc.line, d.loc.col, d.message);
  EXPECT_EQ(ok, out.empty());
  return out;
}

TEST(ExecViewBounds, ViewsOutsideTheirBufferAreErrors) {
  const std::string strided =
      "def k<1>[threads=4](f32* x_ptr, i32 n, i32 s):\n"
      "    g = ViewGlobal(x_ptr, dtype=f32, shape=[n, 4], strides=[s, 1])\n"
      "    x = LoadGlobal(g, layout=spatial(4, 1))\n";
  EXPECT_EQ(check(strided, 64, {{"n", 4}, {"s", 4}}), "");  // 16 f32 exactly
  EXPECT_EQ(check(strided, 60, {{"n", 4}, {"s", 4}}),
            "2:9: ViewGlobal of 'x_ptr' reaches elements 0 to 15, outside its buffer of 15 f32 elements "
            "(shape [4, 4], strides [4, 1]): on the GPU the kernel would access other memory\n");
  EXPECT_EQ(check(strided, 64, {{"n", 4}, {"s", -4}}),
            "2:9: ViewGlobal of 'x_ptr' reaches elements -12 to 3, outside its buffer of 16 f32 elements "
            "(shape [4, 4], strides [-4, 1]): on the GPU the kernel would access other memory\n");
  EXPECT_EQ(check(strided, 64, {{"n", 0}, {"s", 1000}}), "");  // no element
  EXPECT_EQ(check(strided, 64, {{"n", int64_t{1} << 40}, {"s", int64_t{1} << 40}}),
            "2:9: ViewGlobal of 'x_ptr' reaches elements 0 to past 2^63, outside its buffer of 16 f32 "
            "elements (shape [1099511627776, 4], strides [1099511627776, 1]): on the GPU the kernel would "
            "access other memory\n");
  // Row-major from the shape; sub-byte elements count in the buffer's bits.
  EXPECT_EQ(check("def k<1>[threads=4](u4* x_ptr):\n"
                  "    g = ViewGlobal(x_ptr, dtype=u4, shape=[3, 11])\n"
                  "    x = LoadGlobal(g, layout=spatial(1, 4))\n",
                  16),
            "2:9: ViewGlobal of 'x_ptr' reaches elements 0 to 32, outside its buffer of 32 u4 elements "
            "(shape [3, 11], strides [11, 1]): on the GPU the kernel would access other memory\n");
}

TEST(ExecViewBounds, ViewsOnlyTheKernelCanEvaluateOrThatNothingUsesAreLeftToTheInterpreter) {
  // No instruction reads or writes g: the kernel touches nothing through it.
  EXPECT_EQ(check("def k<1>[threads=4](f32* x_ptr):\n"
                  "    g = ViewGlobal(x_ptr, dtype=f32, shape=[1000])\n",
                  4),
            "");
  EXPECT_EQ(check("def k<8>[threads=4](f32* x_ptr):\n"
                  "    b = BlockIndices()\n"
                  "    g = ViewGlobal(x_ptr, dtype=f32, shape=[b * 1000])\n"
                  "    x = LoadGlobal(g, layout=spatial(4))\n",
                  4),
            "");
}

// Every program the GPU differential test (CodegenGpu.InterpreterAndGpuAgree) runs on the GPU, those the
// interpreter runs without an error with buffers of 2^20 elements and scalars of 20, passes the check, so
// that test cannot fail on it.
TEST(ExecViewBounds, TheDifferentialTestProgramsPass) {
  int checked = 0;
  for (const auto& path : codegen_test::verifying_programs()) {
    std::optional<ir::Program> p = codegen_test::load_program(path);
    ASSERT_TRUE(p);
    interp::Arguments args;
    std::map<std::string, std::vector<uint8_t>> buffers;
    for (const ir::Var& v : p->params) {
      if (v->type.is_pointer()) {
        buffers[v->name].resize(static_cast<size_t>((int64_t{1} << 20) * v->type.dtype.bits() / 8));
        args.buffers[v->name] = &buffers[v->name];
      } else {
        args.scalars[v->name] = interp::ScalarValue{v->type.dtype.is_float(), 20, 1.5};
      }
    }
    Diagnostics diags;
    interp::RunOptions first_blocks;  // the whole grid takes a minute; out-of-buffer views show at once
    first_blocks.num_blocks = 4;
    if (!interp::run_program(*p, args, diags, first_blocks)) continue;  // rejected there too
    EXPECT_TRUE(check_views_in_buffers(*p, args, diags)) << path << "\n" << diags.render(path.string(), "");
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace tilevm::exec
