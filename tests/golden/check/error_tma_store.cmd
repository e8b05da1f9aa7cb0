check error_tma_store.tile
