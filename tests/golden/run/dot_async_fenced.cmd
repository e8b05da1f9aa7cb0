run dot_async_fenced.tile --interp
