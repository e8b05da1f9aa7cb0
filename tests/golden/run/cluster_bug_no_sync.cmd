run cluster_bug_no_sync.tile --interp --in x_ptr=x32x8.npy
