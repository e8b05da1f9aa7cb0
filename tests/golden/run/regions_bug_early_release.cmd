run regions_bug_early_release.tile --interp --in x_ptr=x32x8.npy
