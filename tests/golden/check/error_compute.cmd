check error_compute.tile
