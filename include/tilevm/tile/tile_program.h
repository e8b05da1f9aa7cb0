// What the tile layer's passes ask of a whole program.
#pragma once

#include "tilevm/ir/program.h"

namespace tilevm::tile {

// Whether any statement of the program, at any depth, is a tile operator (ir::is_tile_operator): the passes
// that act only on tile programs return every other program unchanged.
bool uses_tile_operators(const ir::Program& program);

// The shape of a register or shared tile operand's view (TensorArg::static_view_shape), which the verifier
// has checked to be constant. @pre the program verified
layout::Index tile_shape(const ir::TensorArg& arg);

}  // namespace tilevm::tile
