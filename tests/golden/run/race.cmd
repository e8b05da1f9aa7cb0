run race.tile --in out_ptr=x_f32.npy
