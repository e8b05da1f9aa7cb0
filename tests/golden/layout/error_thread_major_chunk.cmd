layout "thread_major(local(1, 2).spatial(2, 1).local(3, 1), chunk=2)"
