emit dot_async_register_print.tile --arch sm_90a
