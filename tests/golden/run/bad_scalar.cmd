run scale.tile --in x_ptr=x.npy --arg s=abc
