print header.tile
