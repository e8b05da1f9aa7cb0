run tma_deadlock.tile --interp --in x_ptr=x32x8.npy
