print everything.tile
