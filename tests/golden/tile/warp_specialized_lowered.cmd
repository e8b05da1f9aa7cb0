print warp_specialized.tile --after lower_tile_ops --arch sm_90a
