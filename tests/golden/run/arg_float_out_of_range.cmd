run scale.tile --interp --in x_ptr=x.npy --arg s=1e39
