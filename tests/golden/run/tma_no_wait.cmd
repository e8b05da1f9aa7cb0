run tma_no_wait.tile --interp --in x_ptr=x32x8.npy
