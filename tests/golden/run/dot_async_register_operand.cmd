run dot_async_register_operand.tile --interp
