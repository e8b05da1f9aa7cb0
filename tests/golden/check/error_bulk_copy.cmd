check error_bulk_copy.tile
