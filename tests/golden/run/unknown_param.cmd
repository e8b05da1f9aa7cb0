run scale.tile --in x_ptr=x.npy --arg s=2.5 --arg t=1
