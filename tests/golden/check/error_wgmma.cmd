check error_wgmma.tile
