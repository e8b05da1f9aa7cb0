print rasterize.tile --after lower_tile_ops
