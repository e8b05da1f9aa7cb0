print lowering.tile
