check error_threads.tile
