run scale.tile -D BIAS=-3 --in x_ptr=x.npy --arg s=-1
