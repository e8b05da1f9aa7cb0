// The kernel's signature as data (EmittedKernel::params): what the launcher packs, in the emitted order.
#include <gtest/gtest.h>

#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/parser.h"
#include "tilevm/transform/lower.h"

namespace tilevm::codegen::cuda {
namespace {

EmittedKernel emit_text(const std::string& source) {
  Diagnostics diags;
  std::optional<ir::Program> program = ir::parse_program(source, diags);
  EXPECT_TRUE(program && !diags.has_errors()) << diags.render("<test>", source);
  return emit_cuda(transform::lower(*program, {.verify_each_pass = true}),
                   {.target = target::Target::for_arch("sm_90")});
}

TEST(CodegenSignature, ParamsFollowTheProgramThenTheWorkspaceAndMatchTheSource) {
  const EmittedKernel k = emit_text(R"(
def scale<n / 8>(f16* x_ptr, i64 n, f32 s, u8* y_ptr):
    gx = ViewGlobal(x_ptr, dtype=f16, shape=[8])
    x = LoadGlobal(gx, layout=spatial(8))
    y = Mul(x, s)
    StoreGlobal(y, gx)
)");
  ASSERT_EQ(k.params.size(), 5u);
  using Kind = KernelParam::Kind;
  const std::vector<std::tuple<Kind, std::string, std::string>> expected = {
      {Kind::Pointer, "x_ptr", "void*"},
      {Kind::Scalar, "n", "long long"},
      {Kind::Scalar, "s", "float"},
      {Kind::Pointer, "y_ptr", "void*"},
      {Kind::Workspace, "tv_workspace", "void*"}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(k.params[i].kind, std::get<0>(expected[i])) << i;
    EXPECT_EQ(k.params[i].name, std::get<1>(expected[i])) << i;
    EXPECT_EQ(k.params[i].c_type, std::get<2>(expected[i])) << i;
  }
  EXPECT_EQ(k.params[1].dtype, DataType::int_(64));
  EXPECT_EQ(k.params[3].dtype, DataType::uint(8));
  // The source declares the same parameters in the same order.
  const size_t open = k.source.find(k.kernel_name + "(");
  ASSERT_NE(open, std::string::npos);
  const std::string decl = k.source.substr(open, k.source.find(')', open) - open);
  size_t at = 0;
  for (const KernelParam& p : k.params) {
    const size_t found = decl.find(p.c_type == "void*" ? "void*" : p.c_type + " ", at);
    ASSERT_NE(found, std::string::npos) << p.name << " in " << decl;
    at = found + 1;
  }
}

}  // namespace
}  // namespace tilevm::codegen::cuda
