// The layout text: parse_layout, print_layout (canonical), the pictures and the map.
//
// Laws checked on random layouts: parse(print(L)) == L, print(parse(print(L))) == print(L), and the parser
// throws nothing but tilevm::Error on any input (random strings and mutations of valid expressions).
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "layout_test_util.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/support/error.h"

namespace tilevm::layout {
namespace {

using testing::gen_recipe;
using testing::Recipe;

std::string canonical(const std::string& text) {
  return print_layout(parse_layout(text));
}

// The message of the tilevm::Error that parsing `text` throws ("" if it parses).
std::string parse_error(const std::string& text) {
  try {
    parse_layout(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---------------------------------------------------------------------------------------------------------
// Parsing

TEST(LayoutParse, PrimitivesMatchTheApi) {
  EXPECT_EQ(parse_layout("local(2, 3)"), local({2, 3}));
  EXPECT_EQ(parse_layout("spatial(2,3)"), spatial({2, 3}));
  EXPECT_EQ(parse_layout("column_local(2,3)"), column_local({2, 3}));
  EXPECT_EQ(parse_layout("column_spatial(2,3)"), column_spatial({2, 3}));
  EXPECT_EQ(parse_layout("repeat(2,3)"), local({2, 3}));
  EXPECT_EQ(parse_layout("column_repeat(2,3)"), column_local({2, 3}));
  EXPECT_EQ(parse_layout("replicate(4)"), replicate(4));
  EXPECT_EQ(parse_layout("local()"), local({}));
}

TEST(LayoutParse, ChainsComposeEachCallOnItsOwn) {
  Layout mma = compose(compose(local({2, 1}), spatial({8, 4})), local({1, 2}));
  EXPECT_EQ(parse_layout("local(2,1).spatial(8,4).local(1,2)"), mma);
  EXPECT_EQ(parse_layout("  local ( 2 , 1 ) . spatial(8,4)\t.\nlocal(1,2) "), mma);
  EXPECT_EQ(parse_layout("compose(local(2,1), compose(spatial(8,4), local(1,2)))"), mma);
  EXPECT_EQ(parse_layout("(local(2,1).spatial(8,4)).local(1,2)"), mma);

  Layout swizzled = compose(compose(local({3, 1, 1}), make_swizzle(local({16, 32}), 1, 0)), local({1, 8}));
  EXPECT_EQ(parse_layout("local(3,1,1).swizzle(local(16,32), dim=1).local(1,8)"), swizzled);
  // docs/language.md's reading of the chained swizzle parses too.
  EXPECT_EQ(parse_layout("local(3,1,1).(swizzle(local(16,32), dim=1)).local(1,8)"), swizzled);

  Layout reduced = compose(reduce(spatial({1, 1, 4}), {2}), local({1, 4}));
  EXPECT_EQ(parse_layout("reduce(spatial(1, 1, 4), dims=[2]).local(1, 4)"), reduced);
}

TEST(LayoutParse, DivisionBindsLooserThanComposition) {
  EXPECT_EQ(parse_layout("local(2,4) / local(1,2)"), local({2, 2}));
  EXPECT_EQ(parse_layout("divide(local(2,4), local(1,2))"), local({2, 2}));
  EXPECT_EQ(parse_layout("local(2,1).local(1,4) / local(1,2)"), local({2, 2}));
  EXPECT_EQ(parse_layout("local(2,8) / local(1,2) / local(1,2)"), local({2, 2}));
  EXPECT_EQ(parse_layout("local(2,1).(local(1,4) / local(1,2))"), local({2, 2}));
}

TEST(LayoutParse, SwizzleAndRegisterLayout) {
  EXPECT_EQ(parse_layout("swizzle(local(16, 4), dim=1, log_step=1)"), make_swizzle(local({16, 4}), 1, 1));
  EXPECT_EQ(parse_layout("swizzle(local(8, 8), dim=0)"), make_swizzle(local({8, 8}), 0, 0));
  EXPECT_EQ(parse_layout("register_layout(shape=[16, 8], mode_shape=[2, 8, 4, 2], spatial_modes=[1, 2], "
                         "local_modes=[0, 3])"),
            parse_layout("local(2,1).spatial(8,4).local(1,2)"));
  // Keywords in any order; -k in spatial_modes is a replication.
  EXPECT_EQ(parse_layout("register_layout(local_modes=[], spatial_modes=[-4], mode_shape=[], shape=[])"),
            replicate(4));
}

TEST(LayoutParse, ErrorsNameTheColumnAndWhatWasExpected) {
  EXPECT_EQ(parse_error("local(2,1"), "invalid layout: column 10: expected ')', found end of input");
  EXPECT_EQ(parse_error("local(2,1,)"), "invalid layout: column 11: expected a positive integer, found ')'");
  EXPECT_EQ(parse_error("local(2, 0)"), "invalid layout: column 10: extent 0 is not positive");
  EXPECT_EQ(parse_error("local(2) local(2)"),
            "invalid layout: column 10: expected '.', '/' or end of input, "
            "found 'local'");
  EXPECT_EQ(parse_error("local(2)."),
            "invalid layout: column 10: expected a layout (a primitive such as "
            "local(...), or '('), found end of input");
  EXPECT_EQ(parse_error("swizzle(local(4,4), dm=1)"),
            "invalid layout: column 21: expected 'dim=', found 'dm'");
  EXPECT_EQ(parse_error("local(2 $ 3)"), "invalid layout: column 9: unexpected character '$'");
  EXPECT_EQ(parse_error("local(2\x01)"), "invalid layout: column 8: unexpected character '\\x01'");
  EXPECT_EQ(parse_error("reduce(local(2), dims=[-1])"),
            "invalid layout: column 24: expected an integer, found '-'");
  EXPECT_EQ(parse_error("local(99999999999999999999999)"),
            "invalid layout: column 7: integer 99999999999999999999999 is larger than 2^31");
  EXPECT_EQ(parse_error(""),
            "invalid layout: column 1: expected a layout (a primitive such as local(...), or "
            "'('), found end of input");
  EXPECT_EQ(
      parse_error("loca(2)").rfind("invalid layout: column 1: unknown layout 'loca'; expected local", 0), 0u);
  EXPECT_EQ(parse_error("register_layout(shape=[2], shape=[2])"),
            "invalid layout: column 28: keyword 'shape' given twice");
}

TEST(LayoutParse, AlgebraErrorsCarryTheColumnOfTheirCall) {
  EXPECT_EQ(parse_error("local(2,3)/local(1,2)").rfind("invalid layout: column 11: cannot divide", 0), 0u);
  EXPECT_EQ(parse_error("divide(local(2,3), local(1,2))").rfind("invalid layout: column 1: cannot divide", 0),
            0u);
  EXPECT_EQ(parse_error("local(2).swizzle(local(4,3), dim=1)").rfind("invalid layout: column 10: ", 0), 0u);
  EXPECT_EQ(parse_error("reduce(local(2), dims=[3])").rfind("invalid layout: column 1: ", 0), 0u);
  EXPECT_EQ(parse_error("register_layout(shape=[4], mode_shape=[3], spatial_modes=[], local_modes=[0])")
                .rfind("invalid layout: column 1: ", 0),
            0u);
}

TEST(LayoutParse, RefusesHugeLayoutsAndDeepNesting) {
  EXPECT_EQ(parse_error("local(65536, 65536)"),
            "invalid layout: column 1: the extents of local multiply to more than 2^31");
  EXPECT_EQ(parse_layout("local(65536, 32768)").num_locals(), int64_t{1} << 31);
  EXPECT_EQ(parse_error("local(65536).local(65536)"),
            "invalid layout: column 14: the composition has more than 2^31 threads, slots or elements");
  EXPECT_EQ(parse_error("spatial(2147483648).spatial(2)"),
            "invalid layout: column 21: the composition has more than 2^31 threads, slots or elements");
  EXPECT_NE(
      parse_error("register_layout(shape=[2147483648, 2], mode_shape=[], spatial_modes=[], local_modes=[])"),
      "");
  std::string deep = std::string(10000, '(') + "local(1)" + std::string(10000, ')');
  EXPECT_EQ(parse_error(deep).rfind("invalid layout: column ", 0), 0u);
  std::string deep_calls;
  for (int k = 0; k < 10000; ++k) deep_calls += "compose(";
  EXPECT_NE(parse_error(deep_calls).find("nested deeper than"), std::string::npos);
  EXPECT_EQ(parse_layout(std::string(30, '(') + "local(2)" + std::string(30, ')')), local({2}));
}

// ---------------------------------------------------------------------------------------------------------
// Printing

TEST(LayoutPrint, MmaLayoutPrintsAsWritten) {
  EXPECT_EQ(canonical("local(2,1).spatial(8,4).local(1,2)"), "local(2, 1).spatial(8, 4).local(1, 2)");
  EXPECT_EQ(canonical("column_local(2,2).spatial(8,4).local(1,2)"),
            "column_local(2, 2).spatial(8, 4).local(1, 2)");
  EXPECT_EQ(canonical("spatial(4).local(3).spatial(32)"), "spatial(4).local(3).spatial(32)");
  EXPECT_EQ(canonical("column_spatial(4, 8)"), "column_spatial(4, 8)");
  EXPECT_EQ(canonical("replicate(4)"), "replicate(4)");
  // A replication alone does not show the rank: local(1, ..., 1) in front does.
  EXPECT_EQ(canonical("reduce(spatial(1, 4), dims=[1])"), "local(1).replicate(4)");
  EXPECT_EQ(canonical("local(1, 1).replicate(2).replicate(2)"), "local(1, 1).replicate(4)");
}

TEST(LayoutPrint, SpellingsOfOneLayoutPrintAlike) {
  EXPECT_EQ(canonical("local(2,1).local(1,2)"), "local(2, 2)");
  EXPECT_EQ(canonical("repeat(2,2)"), "local(2, 2)");
  EXPECT_EQ(canonical("local(2,4)/local(1,2)"), "local(2, 2)");
  EXPECT_EQ(canonical("local(1,1)"), "local(1, 1)");
  EXPECT_EQ(canonical("local(1).spatial(1,1,1)"), "local(1, 1, 1)");
  EXPECT_EQ(canonical("local()"), "local()");
  EXPECT_EQ(canonical("local(4).local(2)"), "local(8)");
  EXPECT_EQ(canonical("spatial(2).local(3).spatial(2)"), "spatial(2).local(3).spatial(2)");
  EXPECT_EQ(canonical("local(3).spatial(2).spatial(2)"), "local(3).spatial(4)");
  // Lower ranks broadcast: the primitives print at the layout's rank.
  EXPECT_EQ(canonical("local(2, 1, 1).local(4)"), "local(2, 1, 4)");
  EXPECT_EQ(canonical("spatial(1, 4).local(4, 1).local(2, 1).column_spatial(4, 8).local(2, 1)"),
            "local(8, 1).column_spatial(4, 32).local(2, 1)");
  EXPECT_EQ(canonical("register_layout(shape=[16, 8], mode_shape=[2, 8, 4, 2], spatial_modes=[1, 2], "
                      "local_modes=[0, 3])"),
            "local(2, 1).spatial(8, 4).local(1, 2)");
}

TEST(LayoutPrint, PaperExamplesAreFixedPoints) {
  for (const char* text : {
           "reduce(spatial(1, 1, 4), dims=[2]).local(1, 4).column_local(2, 2).spatial(8, 4).local(1, 2)",
           "spatial(1, 4).local(4, 1).local(2, 1).column_spatial(4, 8).local(2, 1)",
           "spatial(1, 4).local(2, 1).spatial(8, 4).local(1, 2)",
           "spatial(4).local(3).spatial(32)",
           "local(3, 1, 1).swizzle(local(16, 32), dim=1).local(1, 8)",
           "local(3, 1536)",
           "local(1, 2).swizzle(local(16, 4), dim=1, log_step=1).local(1, 8)",
       }) {
    SCOPED_TRACE(text);
    Layout layout = parse_layout(text);
    std::string printed = print_layout(layout);
    EXPECT_EQ(parse_layout(printed), layout);
    EXPECT_EQ(canonical(printed), printed);
  }
  EXPECT_EQ(
      canonical(
          "reduce(spatial(1, 1, 4), dims=[2]).local(1, 4).column_local(2, 2).spatial(8, 4).local(1, 2)"),
      "column_local(2, 8).replicate(4).spatial(8, 4).local(1, 2)");
  EXPECT_EQ(canonical("local(3, 1, 1).swizzle(local(16, 32), dim=1).local(1, 8)"),
            "local(3, 1, 1).swizzle(local(16, 32), dim=1).local(1, 1, 8)");
  EXPECT_EQ(canonical("local(1, 2).swizzle(local(16, 4), dim=1, log_step=1).local(1, 8)"),
            "local(1, 2).swizzle(local(16, 4), dim=1, log_step=1).local(1, 8)");
}

TEST(LayoutPrint, NonChainsPrintAsRegisterLayout) {
  // Dimension 0 split into 2 x 2 with the inner mode as the outer thread digit: no chain of primitives.
  std::string text = "register_layout(shape=[4], mode_shape=[2, 2], spatial_modes=[1, 0], local_modes=[])";
  EXPECT_EQ(canonical(text), text);
  Layout layout = parse_layout(text);
  EXPECT_EQ(layout.map(1, 0), Index{2});
  EXPECT_EQ(layout.map(2, 0), Index{1});
}

// Random chains (the lead's recipes: primitives, reduce, swizzle, replicate) round-trip through the text.
RC_GTEST_PROP(LayoutPrint, RecipesRoundTrip, ()) {
  int rank = *rc::gen::inRange(0, 4);
  Recipe recipe = *gen_recipe(rank, 5);
  Layout layout = recipe.build();
  RC_PRE(layout.num_threads() * layout.num_locals() <= 4096);
  RC_ASSERT(parse_layout(recipe.show()) == layout);
  std::string printed = print_layout(layout);
  RC_ASSERT(parse_layout(printed) == layout);
  RC_ASSERT(canonical(printed) == printed);
}

// Random mode layouts, most of them not chains of primitives: each dimension split into random modes, the
// modes shuffled into the spatial and local lists with replications among the spatial ones.
rc::Gen<ModeLayout> gen_mode_layout() {
  return rc::gen::exec([] {
    int rank = *rc::gen::inRange(0, 4);
    Index shape;
    std::vector<int64_t> mode_shape;
    for (int d = 0; d < rank; ++d) {
      int modes = *rc::gen::inRange(0, 4);
      int64_t extent = 1;
      for (int k = 0; k < modes && mode_shape.size() < 6; ++k) {
        int64_t size = *rc::gen::element<int64_t>(2, 3);
        mode_shape.push_back(size);
        extent *= size;
      }
      shape.push_back(extent);
    }
    std::vector<int64_t> order(mode_shape.size());
    std::iota(order.begin(), order.end(), 0);
    for (size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[*rc::gen::inRange<size_t>(0, k)]);
    std::vector<int64_t> spatial, local;
    for (int64_t m : order) (*rc::gen::arbitrary<bool>() ? spatial : local).push_back(m);
    int replications = *rc::gen::inRange(0, 3);
    for (int k = 0; k < replications; ++k) {
      auto at = static_cast<size_t>(*rc::gen::inRange<size_t>(0, spatial.size() + 1));
      spatial.insert(spatial.begin() + static_cast<std::ptrdiff_t>(at), -*rc::gen::inRange<int64_t>(2, 4));
    }
    return make_mode_layout(shape, mode_shape, spatial, local);
  });
}

// Ten layouts a run: about one in twelve is not a chain and prints as register_layout.
RC_GTEST_PROP(LayoutPrint, ModeLayoutsRoundTrip, ()) {
  for (int round = 0; round < 10; ++round) {
    Layout layout = *gen_mode_layout();
    std::string printed = print_layout(layout);
    RC_LOG() << printed << "\n";
    RC_ASSERT(parse_layout(printed) == layout);
    RC_ASSERT(canonical(printed) == printed);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Never crash: only tilevm::Error, always one line naming a column.

void check_parse_is_safe(const std::string& text) {
  try {
    Layout layout = parse_layout(text);
    std::string printed = print_layout(layout);
    RC_ASSERT(canonical(printed) == printed);
  } catch (const Error& e) {
    std::string message = e.what();
    RC_ASSERT(message.rfind("invalid layout: column ", 0) == 0);
    RC_ASSERT(message.find('\n') == std::string::npos);
  }
}

const std::vector<std::string>& valid_examples() {
  static const std::vector<std::string> examples = {
      "local(2, 1).spatial(8, 4).local(1, 2)",
      "reduce(spatial(1, 1, 4), dims=[2]).local(1, 4).column_local(2, 2).spatial(8, 4).local(1, 2)",
      "spatial(1, 4).local(4, 1).local(2, 1).column_spatial(4, 8).local(2, 1)",
      "local(3, 1, 1).swizzle(local(16, 32), dim=1).local(1, 8)",
      "local(1, 2).swizzle(local(16, 4), dim=1, log_step=1).local(1, 8)",
      "compose(replicate(2), divide(local(2, 8), column_local(1, 2)))",
      "register_layout(shape=[4, 2], mode_shape=[2, 2, 2], spatial_modes=[1, -2, 0], local_modes=[2])",
      "(local(2).spatial(4)) / spatial(2)",
  };
  return examples;
}

RC_GTEST_PROP(LayoutParseFuzz, RandomStringsOnlyThrowErrors, ()) {
  static const std::vector<std::string> pieces = {"local",
                                                  "spatial",
                                                  "column_local",
                                                  "column_spatial",
                                                  "repeat",
                                                  "replicate",
                                                  "compose",
                                                  "divide",
                                                  "reduce",
                                                  "swizzle",
                                                  "register_layout",
                                                  "dims",
                                                  "dim",
                                                  "log_step",
                                                  "shape",
                                                  "mode_shape",
                                                  "spatial_modes",
                                                  "local_modes",
                                                  "(",
                                                  ")",
                                                  "[",
                                                  "]",
                                                  ",",
                                                  ".",
                                                  "/",
                                                  "=",
                                                  "-",
                                                  " ",
                                                  "0",
                                                  "1",
                                                  "2",
                                                  "3",
                                                  "4",
                                                  "16",
                                                  "2147483648",
                                                  "x",
                                                  "\t",
                                                  "#",
                                                  "\xff"};
  for (int round = 0; round < 20; ++round) {
    int n = *rc::gen::inRange(0, 40);
    std::string text;
    for (int k = 0; k < n; ++k) text += *rc::gen::elementOf(pieces);
    check_parse_is_safe(text);
  }
}

// A valid expression with a few random edits.
rc::Gen<std::string> gen_mutation() {
  return rc::gen::exec([] {
    std::string text = *rc::gen::elementOf(valid_examples());
    const std::string alphabet = "()[],./=-0123456789 _az";
    int edits = *rc::gen::inRange(1, 5);
    for (int k = 0; k < edits; ++k) {
      size_t at = *rc::gen::inRange<size_t>(0, text.size() + 1);
      switch (*rc::gen::inRange(0, 4)) {
        case 0:  // delete a character
          if (at < text.size()) text.erase(at, 1);
          break;
        case 1:  // insert one
          text.insert(at, 1, *rc::gen::elementOf(alphabet));
          break;
        case 2:  // replace one
          if (at < text.size()) text[at] = *rc::gen::elementOf(alphabet);
          break;
        default: {  // duplicate a slice: nests calls, repeats arguments
          size_t length = *rc::gen::inRange<size_t>(0, text.size() - at + 1);
          text.insert(at, text.substr(at, length));
        }
      }
    }
    return text;
  });
}

RC_GTEST_PROP(LayoutParseFuzz, MutatedExpressionsOnlyThrowErrors, ()) {
  for (int round = 0; round < 20; ++round) check_parse_is_safe(*gen_mutation());
}

// ---------------------------------------------------------------------------------------------------------
// Pictures and map

TEST(LayoutPicture, GridOfOwners) {
  EXPECT_EQ(render_layout_picture(parse_layout("spatial(2, 2).local(1, 2)")),
            "layout spatial(2, 2).local(1, 2) shape=[2, 4] threads=4 locals=2\n"
            "   |    0    1    2    3\n"
            "---+--------------------\n"
            " 0 |  0:0  0:1  1:0  1:1\n"
            " 1 |  2:0  2:1  3:0  3:1\n");
  EXPECT_EQ(render_layout_picture(parse_layout("spatial(2).local(2)")),
            "layout spatial(2).local(2) shape=[4] threads=2 locals=2\n"
            "    0    1    2    3\n"
            "  0:0  0:1  1:0  1:1\n");
  EXPECT_EQ(render_layout_picture(parse_layout("replicate(2)")),
            "layout replicate(2) shape=[] threads=2 locals=1\n"
            "0:0|1:0\n");
}

TEST(LayoutPicture, ReplicatedCellsAndHigherRanks) {
  std::string picture = render_layout_picture(parse_layout("reduce(spatial(2, 2), dims=[1])"));
  EXPECT_EQ(picture,
            "layout spatial(2).replicate(2) shape=[2] threads=4 locals=1\n"
            "        0        1\n"
            "  0:0|1:0  2:0|3:0\n");
  std::string rank3 = render_layout_picture(parse_layout("spatial(2, 1, 2)"));
  EXPECT_NE(rank3.find("[0, :, :]\n"), std::string::npos);
  EXPECT_NE(rank3.find("\n[1, :, :]\n"), std::string::npos);
}

TEST(LayoutMap, OneLinePerThreadAndSlot) {
  EXPECT_EQ(render_layout_map(parse_layout("spatial(2, 1).local(1, 2)")),
            "0 0 : 0 0\n0 1 : 0 1\n1 0 : 1 0\n1 1 : 1 1\n");
  EXPECT_EQ(render_layout_map(parse_layout("replicate(2)")), "0 0 :\n1 0 :\n");
}

TEST(LayoutSvg, StandaloneGridWithTitle) {
  std::string svg = render_layout_svg(parse_layout("local(2, 1).spatial(8, 4).local(1, 2)"));
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("<title>layout local(2, 1).spatial(8, 4).local(1, 2)"), std::string::npos);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 16 * 8, true);
  EXPECT_NE(svg.find(">31:3</text>"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  // Many owners in one cell: the label is cut to a count.
  std::string replicated = render_layout_svg(parse_layout("replicate(8)"));
  EXPECT_NE(replicated.find(">+5 more</text>"), std::string::npos);
}

}  // namespace
}  // namespace tilevm::layout
