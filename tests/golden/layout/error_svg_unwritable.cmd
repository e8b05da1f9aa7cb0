layout "local(2)" --svg no_such_dir/out.svg
