// `tilevm layout EXPR [--map] [--svg FILE]` (docs/language.md section 6).
//
// Prints the picture of the layout (first line `layout <canonical text> shape=[...] threads=T locals=m`), or
// with --map only its map. --svg FILE also writes an SVG picture to FILE; stdout is then unchanged (the
// picture, or the map with --map), so the command still shows what it drew.
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/support/error.h"
#include "tilevm/support/file_io.h"

namespace tilevm::cli {
namespace {

struct LayoutOptions {
  std::string expression;
  bool map = false;
  std::string svg_path;
};

// Pictures and maps are built in memory and have a line or a cell per (t, i) pair: beyond this many the
// output is unreadable anyway, and a typo such as local(65536, 32768) should not exhaust memory.
constexpr int64_t kMaxDrawn = int64_t{1} << 20;

void run_layout(const LayoutOptions& options) {
  layout::Layout layout = layout::parse_layout(options.expression);
  int64_t pairs = layout.num_threads() * layout.num_locals();  // each at most 2^31: no overflow
  if (pairs > kMaxDrawn || layout.num_elements() > kMaxDrawn) {
    fail(
        "layout {} is too large to draw: {} threads x {} locals over {} elements; at most {} of each are "
        "drawn",
        layout::print_layout(layout), layout.num_threads(), layout.num_locals(), layout.num_elements(),
        kMaxDrawn);
  }
  // Write the SVG first: a failure to write it is reported before anything goes to stdout.
  if (!options.svg_path.empty()) write_file(options.svg_path, layout::render_layout_svg(layout));
  std::cout << (options.map ? layout::render_layout_map(layout) : layout::render_layout_picture(layout));
}

}  // namespace

void add_layout_command(CLI::App& app) {
  auto options = std::make_shared<LayoutOptions>();
  CLI::App* command = app.add_subcommand("layout", "print a layout's picture, map or SVG");
  command
      ->add_option("expr", options->expression,
                   "a layout expression, e.g. \"local(2, 1).spatial(8, 4).local(1, 2)\"")
      ->required();
  command->add_flag("--map", options->map, "print one line `t i : i0 i1 ...` per (thread, slot) instead");
  command->add_option("--svg", options->svg_path, "also write an SVG picture to FILE")->type_name("FILE");
  command->callback([options] { run_layout(*options); });
}

}  // namespace tilevm::cli
