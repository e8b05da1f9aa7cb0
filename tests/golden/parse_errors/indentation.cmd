print indentation.tile
