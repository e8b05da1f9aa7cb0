print no_such_file.tile
