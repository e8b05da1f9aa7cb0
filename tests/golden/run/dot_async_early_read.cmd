run dot_async_early_read.tile --interp
