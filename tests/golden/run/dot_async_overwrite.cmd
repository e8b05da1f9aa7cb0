run dot_async_overwrite.tile --interp
