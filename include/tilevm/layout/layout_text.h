// The text syntax of layouts (docs/language.md section 3) and the pictures of them.
//
//   expr  := chain ('/' chain)*                  division, left to right
//   chain := term ('.' term)*                    Kronecker product, outer first
//   term  := call | '(' expr ')'
//   call  := local(n, ...) | spatial(...) | column_local(...) | column_spatial(...)
//          | repeat(...) | column_repeat(...) | replicate(n)
//          | compose(expr, expr) | divide(expr, expr)
//          | reduce(expr, dims=[d, ...]) | swizzle(expr, dim=d[, log_step=s]) | thread_major(expr[, chunk=c])
//          | register_layout(shape=[...], mode_shape=[...], spatial_modes=[...], local_modes=[...])
//
// In register_layout, a spatial_modes entry -k (k >= 2) is a replication of extent k.
// print_layout gives the canonical text: print_layout(parse_layout(x)) is the same for every x that denotes
// the same layout, and parse_layout(print_layout(L)) == L. A mode factor prints as a chain of primitives when
// it is one, else as register_layout(...).
#pragma once

#include <string>
#include <string_view>

#include "tilevm/layout/layout.h"

namespace tilevm::layout {

// Throws tilevm::Error, one line: `invalid layout: column 12: expected ')', found ','`.
Layout parse_layout(std::string_view text);
std::string print_layout(const Layout& layout);

// `layout <canonical text> shape=[...] threads=T locals=m`, then for rank 1 and 2 a grid of `t:i` cells
// (owners joined by '|' where replicated); for higher ranks one grid per leading index.
std::string render_layout_picture(const Layout& layout);
// One line per (t, i), t-major: `t i : i0 i1 ...`.
std::string render_layout_map(const Layout& layout);
// An SVG picture: the tile as a grid, each cell coloured by its (first) owner thread and labelled `t:i`.
std::string render_layout_svg(const Layout& layout);

}  // namespace tilevm::layout
