layout "local(2).spatail(4)"
