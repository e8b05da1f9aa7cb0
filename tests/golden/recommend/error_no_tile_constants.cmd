recommend no_tiles.tile --arg M=64
