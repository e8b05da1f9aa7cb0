run tma_refill_race.tile --interp --in x_ptr=x32x8.npy
