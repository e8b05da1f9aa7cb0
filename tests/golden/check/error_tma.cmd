check error_tma.tile
