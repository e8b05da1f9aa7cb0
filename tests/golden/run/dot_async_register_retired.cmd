run dot_async_register_retired.tile --interp
