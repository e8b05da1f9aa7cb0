run tma_short_tx.tile --interp --in x_ptr=x32x8.npy
