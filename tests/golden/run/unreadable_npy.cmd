run scale.tile --in x_ptr=missing.npy --arg s=2.5
