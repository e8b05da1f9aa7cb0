layout "local(2048, 1024)"
