print ../../../examples/tile/scale_tma_store.tile --after lower_tile_ops --arch sm_90a
