layout "local(2, 1, 1).spatial(1, 2, 4)"
