run scale.tile --interp --in x_ptr=x.npy --arg s=2 --out x_ptr=/dev/full
