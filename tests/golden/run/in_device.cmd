run scale.tile --interp --in x_ptr=/dev/zero --arg s=2
