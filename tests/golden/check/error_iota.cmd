check error_iota.tile
