run regions_bug_shared_race.tile --interp --in x_ptr=x128.npy
