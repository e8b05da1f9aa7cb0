print regions.tile
