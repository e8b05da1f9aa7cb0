run limits.tile --interp --in x_ptr=x.npy --arg n=-129 --arg rows=1 --arg stride=1
