layout "thread_major(replicate(2).local(2))"
