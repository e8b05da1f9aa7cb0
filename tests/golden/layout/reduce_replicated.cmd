layout "reduce(spatial(2, 2, 4), dims=[2]).local(1, 2)"
