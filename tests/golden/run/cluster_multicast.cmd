run cluster_multicast.tile --interp --in x_ptr=x32x8.npy
