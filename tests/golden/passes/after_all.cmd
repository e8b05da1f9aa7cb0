print lowering.tile --after all
