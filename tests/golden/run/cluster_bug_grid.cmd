run cluster_bug_grid.tile --interp --in x_ptr=x32x8.npy
