print unknown_name.tile
