layout "thread_major(local(2, 1).spatial(2, 4).local(1, 2), chunk=2)"
