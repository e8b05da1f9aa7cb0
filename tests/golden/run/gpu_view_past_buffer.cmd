run limits.tile --gpu --in x_ptr=x.npy --arg n=1 --arg rows=1 --arg stride=2
