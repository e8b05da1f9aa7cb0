check error_scalars.tile
