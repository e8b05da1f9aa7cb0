check missing.tile
