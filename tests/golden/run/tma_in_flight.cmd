run tma_in_flight.tile --interp --in x_ptr=x32x8.npy
