emit ../run/dot_async_register_operand.tile --arch sm_90a
