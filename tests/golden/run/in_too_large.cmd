run scale.tile --interp --in x_ptr=x.npy --arg s=2 --max-memory 100
