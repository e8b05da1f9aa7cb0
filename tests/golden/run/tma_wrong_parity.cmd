run tma_wrong_parity.tile --interp --in x_ptr=x32x8.npy
