check error_regions.tile
