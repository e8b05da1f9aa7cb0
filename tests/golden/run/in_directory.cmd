run scale.tile --interp --in x_ptr=. --arg s=2
