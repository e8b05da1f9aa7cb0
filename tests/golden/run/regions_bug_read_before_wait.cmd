run regions_bug_read_before_wait.tile --interp --in x_ptr=x32x8.npy
