run scale.tile --interp --in x_ptr=overflow.npy --arg s=2
