layout "spatial(4, 0)"
