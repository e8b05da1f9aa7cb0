run blocks_in_place_race.tile --interp --in x_ptr=x128.npy
