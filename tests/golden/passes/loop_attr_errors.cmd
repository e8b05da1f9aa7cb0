check loop_attr_errors.tile
