run regions_loop.tile --interp --in x_ptr=x128.npy
