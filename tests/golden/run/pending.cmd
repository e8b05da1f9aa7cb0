run pending.tile --in x_ptr=x.npy
