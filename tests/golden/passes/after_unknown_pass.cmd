print lowering.tile --after fold_constants
