check error_operands.tile
