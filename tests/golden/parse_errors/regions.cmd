check regions.tile
