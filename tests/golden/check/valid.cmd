check valid.tile
