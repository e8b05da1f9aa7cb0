run blocks_in_place.tile --interp --in x_ptr=x128.npy
