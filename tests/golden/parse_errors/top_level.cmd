print top_level.tile
