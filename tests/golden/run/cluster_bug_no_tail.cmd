run cluster_bug_no_tail.tile --interp --in x_ptr=x32x8.npy
