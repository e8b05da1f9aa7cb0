print bad_layout.tile
