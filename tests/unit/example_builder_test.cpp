// The examples built from C++ (examples/cpp/*.cpp) print exactly as the .tile files parse: the builder and
// the text format make the same programs.
#define TILEVM_EXAMPLE_NO_MAIN
#include "../../examples/cpp/matmul_f16_i6.cpp"
#include "../../examples/cpp/matmul_f16_u6_pipelined.cpp"
#undef TILEVM_EXAMPLE_NO_MAIN

#include <gtest/gtest.h>

#include "example_util.h"
#include "tilevm/ir/printer.h"
#include "tilevm/ir/verifier.h"

namespace tilevm::example_test {
namespace {

// print_program of examples/NAME as parsed (not verified: the builder leaves threads as written).
std::string printed_file(const std::string& name, const std::map<std::string, std::string>& defines = {}) {
  const std::string source = read_text(example_path(name));
  Diagnostics diags;
  ir::ParseOptions options;
  options.defines = defines;
  auto p = ir::parse_program(source, diags, options);
  if (!p) {
    ADD_FAILURE() << diags.render(name, source);
    return "";
  }
  return ir::print_program(*p);
}

TEST(ExampleBuilder, MatmulF16I6) {
  EXPECT_EQ(ir::print_program(examples::build_matmul_f16_i6()), printed_file("matmul_f16_i6.tile"));
}

TEST(ExampleBuilder, MatmulF16I6Transform) {
  EXPECT_EQ(ir::print_program(examples::build_matmul_f16_i6_transform()),
            printed_file("matmul_f16_i6_transform.tile"));
}

TEST(ExampleBuilder, MatmulF16U6Pipelined) {
  EXPECT_EQ(ir::print_program(examples::build_matmul_f16_u6_pipelined()),
            printed_file("matmul_f16_u6_pipelined.tile"));
  // -D overrides and the builder's arguments agree too.
  EXPECT_EQ(ir::print_program(examples::build_matmul_f16_u6_pipelined(16, 64, 1536)),
            printed_file("matmul_f16_u6_pipelined.tile", {{"N", "64"}, {"K", "1536"}}));
}

// The built programs pass the verifier as they are.
TEST(ExampleBuilder, BuiltProgramsVerify) {
  for (ir::Program p : {examples::build_matmul_f16_i6(), examples::build_matmul_f16_i6_transform(),
                        examples::build_matmul_f16_u6_pipelined()}) {
    Diagnostics diags;
    EXPECT_TRUE(ir::verify_program(p, diags)) << diags.render(p.name, "");
  }
}

}  // namespace
}  // namespace tilevm::example_test
