run limits.tile --interp --in x_ptr=x.npy --arg n=1 --arg rows=1 --arg stride=1 --pack x_ptr
