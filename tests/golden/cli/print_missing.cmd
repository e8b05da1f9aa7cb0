print missing.tile
