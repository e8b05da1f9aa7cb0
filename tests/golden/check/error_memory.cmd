check error_memory.tile
