run cluster_bug_local_release.tile --interp --in x_ptr=x32x8.npy
