print wide_constants.tile
