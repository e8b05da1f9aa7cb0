run dot_shared_operand.tile --interp
