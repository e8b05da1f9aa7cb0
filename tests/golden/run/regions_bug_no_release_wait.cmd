run regions_bug_no_release_wait.tile --interp --in x_ptr=x32x8.npy
