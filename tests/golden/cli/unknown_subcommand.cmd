frob scale.tile
