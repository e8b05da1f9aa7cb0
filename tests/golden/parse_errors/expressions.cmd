print expressions.tile
