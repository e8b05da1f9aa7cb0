run tma_store_loop_alloc.tile --interp --in x_ptr=x32x8.npy --in y_ptr=y30x8.npy
