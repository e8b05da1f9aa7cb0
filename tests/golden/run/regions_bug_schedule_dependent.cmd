run regions_bug_schedule_dependent.tile --interp --in x_ptr=x128.npy
