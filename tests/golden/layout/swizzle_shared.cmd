layout "local(1, 2).swizzle(local(8, 4), dim=1, log_step=1)"
