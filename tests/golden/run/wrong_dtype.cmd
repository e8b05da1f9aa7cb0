run scale.tile --in x_ptr=x_f32.npy --arg s=2.5
