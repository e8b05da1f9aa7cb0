run cluster_pipeline.tile --interp --in x_ptr=x32x8.npy
