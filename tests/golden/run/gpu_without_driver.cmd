run scale.tile --gpu --in x_ptr=x.npy --arg s=2.5
