print assign_out.tile
