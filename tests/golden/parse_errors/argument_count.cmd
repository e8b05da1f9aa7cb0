print argument_count.tile
