print loop_attrs.tile
