print bad_dtype.tile
