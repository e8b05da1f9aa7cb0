layout "local(2,3)/local(1,2)"
