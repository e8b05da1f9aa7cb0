check error_rasterize.tile
