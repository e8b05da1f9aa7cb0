layout "local(2, 1).spatial(8, 4"
