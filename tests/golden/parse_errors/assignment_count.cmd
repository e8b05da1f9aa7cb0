print assignment_count.tile
